import Database from '../../src/db/sqlite.js';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { SqliteState } from '../../src/db/sqlite-state.js';

// Migration numbers are reserved per feature and features land in any order: a database that
// already has 8 must still get 6 when 6 lands later.
describe('migrate with reserved numbers', () => {
  const m = (v: number) => ({ version: v, name: `m${v}`, sql: `CREATE TABLE t${v} (x)` });
  const versions = (db: Database.Database) => (db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[]).map((r) => r.version);

  it('applies a lower migration that arrived after a higher one', async () => {
    const db = new Database(':memory:');
    await migrate(new SqliteState(db), [m(1), m(2), m(8)]);
    expect(versions(db)).toEqual([1, 2, 8]);
    await migrate(new SqliteState(db), [m(1), m(2), m(6), m(7), m(8)]);
    expect(versions(db)).toEqual([1, 2, 6, 7, 8]);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name IN ('t6', 't7')").all()).toHaveLength(2);
  });

  it('still refuses a database with a version this build does not know', async () => {
    const db = new Database(':memory:');
    await migrate(new SqliteState(db), [m(1), m(8)]);
    await expect((async () => await migrate(new SqliteState(db), [m(1), m(6)]))()).rejects.toThrow(/schema version 8.*upgrade svc/);
  });

  it('refuses two migrations with one number', async () => {
    await expect((async () => await migrate(new SqliteState(new Database(':memory:')), [m(1), m(1)]))()).rejects.toThrow(/unique/);
  });
});
