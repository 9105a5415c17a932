import Database from '../src/db/sqlite.js';
import { createHash } from 'node:crypto';
import { cpSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SCHEMA_WRITER_KEY } from '../src/db/migrate.js';
import { STATE_MIGRATIONS } from '../src/state-schema.js';
import { packageVersion } from '../src/lib/version.js';
import { openEntry } from '../src/resources/vault/service.js';
import { makeProject, startTestDaemon } from './harness.js';

// A project's .svc/ as svc 1.0.0 left it (test/fixtures/state-1.0.0/README.md), opened by this svc.

const FIXTURE = fileURLToPath(new URL('./fixtures/state-1.0.0/', import.meta.url));
/** Test-only: the key the fixture's vault was sealed with (see the fixture's README). */
const VAULT_KEY = '1c07415c77cd71a4da0a95f13b7702282ac9c2df3b8c3d7239900978dcb736b5';
const env = { SVC_VAULT_KEY: VAULT_KEY };

function fixtureProject(): string {
  const root = makeProject();
  cpSync(join(FIXTURE, 'project.json'), join(root, 'project.json'));
  cpSync(join(FIXTURE, 'dot-svc'), join(root, '.svc'), { recursive: true });
  return root;
}

/** Every file under dir and its sha256. */
function hashes(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const file = join(e.parentPath, e.name);
    out.set(relative(dir, file), createHash('sha256').update(readFileSync(file)).digest('hex'));
  }
  return out;
}

describe('upgrades', () => {
  it('a state written by 1.0.0 opens with its data and leaves with the current schema', async () => {
    const d = await startTestDaemon({ root: fixtureProject(), env });
    try {
      const agents = (await d.api('GET', '/api/v1/agents')).body.data as { name: string; role: string }[];
      expect(agents.map((a) => [a.name, a.role])).toEqual(
        expect.arrayContaining([
          ['ana', 'backend'],
          ['bob', 'review'],
        ]),
      );
      const tasks = (await d.api('GET', '/api/v1/tasks')).body.data as { title: string }[];
      expect(tasks.map((t) => t.title).sort()).toEqual(['review the parser', 'write the parser']);
      const hooks = (await d.api('GET', '/v1/webhooks')).body.data as { url: string; events: string[] }[];
      expect(hooks.map((h) => [h.url, h.events])).toEqual([['http://127.0.0.1:9/hook', ['approval:*']]]);
      expect(await openEntry(d.daemon.app, 'ana', 'github')).toEqual({ token: 'test-only-token' });

      const db = d.daemon.app.db;
      const versions = ((await db.prepare('SELECT version FROM schema_migrations ORDER BY version').all()) as { version: number }[]).map((r) => Number(r.version));
      expect(versions).toEqual(STATE_MIGRATIONS.map((m) => m.version).sort((a, b) => a - b));
      expect(((await db.prepare('SELECT value FROM meta WHERE key = ?').get(SCHEMA_WRITER_KEY)) as { value: string }).value).toBe(packageVersion());
      // A task made after the upgrade lands next to the old ones.
      expect((await d.api('POST', '/api/v1/tasks', { body: { title: 'after the upgrade' } })).status).toBe(201);
    } finally {
      await d.close();
    }
  });

  it('a state from a newer svc is refused, naming both versions, and left byte for byte as it was', async () => {
    const root = fixtureProject();
    const newest = Math.max(...STATE_MIGRATIONS.map((m) => m.version));
    // What a newer svc leaves: a migration this one does not know, and its own version as the writer.
    const db = new Database(join(root, '.svc', 'state.sqlite'));
    db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from svc 99', '2031-01-01T00:00:00.000Z')").run(newest + 100);
    db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run(SCHEMA_WRITER_KEY, '99.0.0');
    db.close();
    const before = hashes(join(root, '.svc'));

    const err = await startTestDaemon({ root, env }).then(
      async (d) => (await d.close(), null),
      (e: Error) => e,
    );
    expect(err?.message).toContain(`schema version ${newest + 100}, which this svc does not know; upgrade svc`);
    expect(err?.message).toContain(`written by svc 99.0.0, and this is svc ${packageVersion()}, which knows schema versions up to ${newest}`);
    const after = hashes(join(root, '.svc'));
    for (const [file, hash] of before) expect(after.get(file), file).toBe(hash);
  });
});
