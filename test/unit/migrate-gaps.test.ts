import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';

// Migration numbers are reserved per feature (6 webhooks, 7 application databases, 8 MCP), and
// features land in any order: a gap is allowed and a late number is applied when it arrives.

describe('migrate with reserved numbers', () => {
  const m = (version: number) => ({ version, name: `m${version}`, sql: `CREATE TABLE t${version} (x)` });
  const tables = (db: Database.Database) => (db.prepare("SELECT name FROM sqlite_schema WHERE name LIKE 't%' ORDER BY name").all() as { name: string }[]).map((r) => r.name);

  it('applies 1 and 3, then 2 when a build knows it, each once', () => {
    const db = new Database(':memory:');
    migrate(db, [m(1), m(3)]);
    expect(tables(db)).toEqual(['t1', 't3']);
    migrate(db, [m(1), m(2), m(3)]);
    migrate(db, [m(1), m(2), m(3)]);
    expect(tables(db)).toEqual(['t1', 't2', 't3']);
  });

  it('refuses a database that has a migration this build does not know, and duplicate numbers', () => {
    const db = new Database(':memory:');
    migrate(db, [m(1), m(7)]);
    expect(() => migrate(db, [m(1), m(2)])).toThrow(/migration 7.*upgrade svc/);
    expect(() => migrate(new Database(':memory:'), [m(1), m(1)])).toThrow(/unique/);
  });
});
