import { Command } from 'commander';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AppResource } from '../src/app.js';
import { COMMANDS } from '../src/cli/commands.js';
import { openDatabase } from '../src/db/open.js';
import { CATEGORIES } from '../src/events/registry.js';
import type { AnyRoute } from '../src/kernel/route.js';
import { loadResources, RESOURCES } from '../src/resources/index.js';
import { loadApi } from '../src/routes.js';
import { NOT_COPIED, STATE_MIGRATIONS, STATE_TABLES } from '../src/state-schema.js';

// One descriptor per resource (src/resources/<name>/resource.ts), listed once in
// src/resources/index.ts: every route, event, table and command of a resource is reached from its
// descriptor, or these fail.

const src = fileURLToPath(new URL('../src/', import.meta.url));
/** Where each descriptor's code is: its resource folder, or the layer it stands for (the event log's API, the agent tools' doors). */
const folderOf = (r: AppResource) => (r.name === 'events' || r.name === 'tools' ? join(src, r.name) : join(src, 'resources', r.name));
const loaded = await loadResources();
const serverOf = (r: AppResource) => loaded.find((l) => l.resource === r)!.server;

/** Every module of a folder (not its subfolders) whose text matches `re`, imported. */
async function modulesOf(dir: string, re: RegExp): Promise<{ file: string; exports: Record<string, unknown> }[]> {
  const out = [];
  for (const f of readdirSync(dir).sort()) {
    const file = join(dir, f);
    if (!f.endsWith('.ts') || statSync(file).isDirectory() || !re.test(readFileSync(file, 'utf8'))) continue;
    out.push({ file: f, exports: (await import(file)) as Record<string, unknown> });
  }
  return out;
}

const isRoute = (v: unknown): v is AnyRoute<unknown> => typeof v === 'object' && v !== null && 'operationId' in v && 'handler' in v && 'path' in v;

describe('resource descriptors', () => {
  it('every folder of src/resources/ is a resource listed once, by its own name', () => {
    const folders = readdirSync(join(src, 'resources')).filter((f) => statSync(join(src, 'resources', f)).isDirectory());
    const listed = RESOURCES.map((r) => r.name);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed.filter((n) => n !== 'events' && n !== 'tools').sort()).toEqual(folders.sort());
  });

  it("every route a resource defines is reached from its descriptor, and the API is exactly the descriptors' routes", async () => {
    for (const r of RESOURCES) {
      const routes = new Set(serverOf(r).routes ?? []);
      for (const { file, exports } of await modulesOf(folderOf(r), /\broute\(\{/)) {
        for (const [name, value] of Object.entries(exports)) {
          for (const route of Array.isArray(value) ? value.filter(isRoute) : []) {
            expect(routes.has(route), `${r.name}: ${file} ${name} ${route.method} ${route.path} is in its descriptor's routes`).toBe(true);
          }
        }
      }
    }
    const { routes } = await loadApi();
    const owned = loaded.flatMap((l) => l.server.routes ?? []);
    expect(routes.filter((r) => r.path !== '/openapi.json')).toEqual(owned);
    expect(new Set(owned).size).toBe(owned.length);
  });

  it('every event category is named by exactly one descriptor, and each named one exists', () => {
    const named = RESOURCES.flatMap((r) => (r.events ?? []).map((c) => [c, r.name] as const));
    expect(named.map(([c]) => c).sort()).toEqual(Object.keys(CATEGORIES).sort());
  });

  it('every table of the state belongs to exactly one descriptor, the one whose migrations make it', async () => {
    const db = await openDatabase(':memory:', STATE_MIGRATIONS);
    try {
      const tables = ((await db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all()) as { name: string }[]).map((t) => t.name);
      const owned = RESOURCES.flatMap((r) => [...(r.tables ?? []), ...(r.transientTables ?? [])]);
      expect(new Set(owned).size).toBe(owned.length);
      expect([...owned, 'meta', 'schema_migrations'].sort()).toEqual(tables.sort());
      expect([...STATE_TABLES, ...NOT_COPIED].sort()).toEqual(tables.sort());
      // A table made by a resource's own migration is that resource's.
      for (const r of RESOURCES) {
        for (const m of r.migrations ?? []) {
          for (const [, table] of m.sql.matchAll(/CREATE TABLE (\w+)/g)) {
            expect([...(r.tables ?? []), ...(r.transientTables ?? [])], `${table} (migration ${m.version})`).toContain(table);
          }
        }
      }
    } finally {
      await db.close();
    }
  });

  it("every CLI command a resource builds is reached from its descriptor's commands, and each entry loads its command", async () => {
    const entries = new Map(COMMANDS.map((c) => [c.name, c]));
    for (const r of RESOURCES) {
      const mine = new Set((r.commands ?? []).map((c) => c.name));
      for (const { file, exports } of await modulesOf(folderOf(r), /export function \w+Command\(/)) {
        for (const [name, fn] of Object.entries(exports)) {
          // A builder takes no argument it must be given (a test's seam at most).
          if (!name.endsWith('Command') || typeof fn !== 'function' || fn.length > 0) continue;
          const cmd = (fn as () => unknown)();
          if (!(cmd instanceof Command)) continue;
          expect(mine.has(cmd.name()), `${r.name}: ${file} ${name} builds \`svc ${cmd.name()}\`, listed by its descriptor`).toBe(true);
        }
      }
      for (const c of r.commands ?? []) {
        expect(entries.get(c.name), `svc ${c.name} is in the CLI`).toBe(c);
        expect((await c.load()).name()).toBe(c.name);
      }
    }
  });
});
