import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Migration } from '../src/db/migrate.js';
import { migrate } from '../src/db/migrate.js';
import { SHARED_MIGRATIONS } from '../src/db/migrations.js';
import { openDatabase } from '../src/db/open.js';
import { RESOURCES } from '../src/resources/index.js';
import { STATE_MIGRATIONS } from '../src/state-schema.js';
import { tempDir } from './temp.js';

// The state's migrations are one file each, owned by their resource (or by db/migrations/ when
// they span several), and put together from the descriptors. What shipped never changes: the
// fixture holds the list as svc had it before the split (d78fd27, where it was one file).

const src = fileURLToPath(new URL('../src/', import.meta.url));
const SHIPPED = JSON.parse(readFileSync(new URL('./fixtures/state-migrations-d78fd27.json', import.meta.url), 'utf8')) as Migration[];

const plain = (m: Migration) => ({ version: m.version, name: m.name, sql: m.sql, ...(m.postgres !== undefined ? { postgres: m.postgres } : {}) });

describe('state migrations', () => {
  it('every migration that shipped is there unchanged: version, name, and the SQL of both providers', () => {
    const now = new Map(STATE_MIGRATIONS.map((m) => [m.version, plain(m)]));
    for (const m of SHIPPED) expect(now.get(m.version), `migration ${m.version}`).toEqual(m);
    expect(STATE_MIGRATIONS.map((m) => m.version)).toEqual([...STATE_MIGRATIONS].map((m) => m.version).sort((a, b) => a - b));
  });

  it('a state migrated by the svc before the split opens without running any migration again', async () => {
    const file = join(tempDir('svc-schema-'), 'state.sqlite');
    const before = await openDatabase(file);
    await migrate(before, SHIPPED);
    const rows = async (db: typeof before) => await db.prepare('SELECT version, name, applied_at FROM schema_migrations ORDER BY version').all();
    const schema = async (db: typeof before) => await db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all();
    const applied = await rows(before);
    const tables = await schema(before);
    await before.close();
    const after = await openDatabase(file, STATE_MIGRATIONS);
    try {
      expect(await rows(after)).toEqual(applied);
      expect(await schema(after)).toEqual(tables);
    } finally {
      await after.close();
    }
  });

  it('each file of a migrations/ folder is one migration, listed by its owner: its resource, or db/migrations.ts when it spans several', async () => {
    const folders = [
      { owner: 'shared', dir: join(src, 'db/migrations'), listed: SHARED_MIGRATIONS },
      ...RESOURCES.map((r) => ({ owner: r.name, dir: join(src, 'resources', r.name, 'migrations'), listed: r.migrations ?? [] })),
    ];
    const seen: Migration[] = [];
    for (const { owner, dir, listed } of folders) {
      let files: string[] = [];
      try {
        files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
      } catch {
        // a resource with no migration of its own
      }
      const found: Migration[] = [];
      for (const f of files) {
        const { migration } = (await import(join(dir, f))) as { migration: Migration };
        expect(Number(/^(\d+)-/.exec(f)?.[1]), `${owner}: ${f} is named after its version`).toBe(migration.version);
        found.push(migration);
      }
      expect(new Set(listed), `${owner} lists exactly the files of its migrations/ folder`).toEqual(new Set(found));
      seen.push(...found);
    }
    expect(new Set(seen)).toEqual(new Set(STATE_MIGRATIONS));
  });
});
