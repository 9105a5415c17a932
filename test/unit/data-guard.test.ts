import Database from '../../src/db/sqlite.js';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/kernel/errors.js';
import { DataFile, type QueryRequest } from '../../src/resources/data/engine.js';
import type { SchemaDefT } from '../../src/resources/data/schema.js';
import { ShadowSchema } from '../../src/resources/data/shadow.js';
import { checkMode, checkOps, checkShadow, gate, programTables, type ExplainRow } from '../../src/resources/data/sql-guard.js';
import { tempDir } from '../temp.js';
import { systemClock } from '../../src/lib/clock.js';

// The SQL guard's layers, each alone: for every kind of hostile statement, the layers meant to stop
// it are shown to stop it without the others, so removing any one layer fails a test here. Then a
// generated sweep of every Unicode whitespace and format character and every quoting form against
// the system columns and the rowid, through a real database file.

const SCHEMA: SchemaDefT = {
  tables: {
    orders: { columns: { item: { type: 'text' }, qty: { type: 'integer', unique: true } }, indexes: [{ name: 'orders_item_idx', columns: ['item'] }] },
    notes: { columns: { body: { type: 'text', nullable: true } } },
  },
};

let dir = '';
beforeAll(() => {
  dir = tempDir('svc-guard-');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What `fn` throws, as an AppError (or a failure when it throws nothing). */
function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected a refusal, got none');
}

/** A throwaway connection with a table, for programs and prepared statements. */
function scratch(): Database.Database {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t (a, b)');
  return db;
}
const program = (db: Database.Database, sql: string): ExplainRow[] => db.prepare(`EXPLAIN ${sql}`).all() as ExplainRow[];

describe('layer 1, the gate, alone', () => {
  const refused = [
    "ATTACH 'x.db' AS x",
    'DETACH x',
    'PRAGMA writable_schema = 1',
    'PRAGMA foreign_keys = OFF',
    'PRAGMA table_info(t)',
    'VACUUM',
    'BEGIN',
    'SAVEPOINT s',
    'RELEASE s',
    'COMMIT',
    'CREATE TABLE x (a)',
    'DROP TABLE t',
    'ALTER TABLE t ADD COLUMN c',
    'REINDEX',
    'ANALYZE',
    'EXPLAIN SELECT 1',
    '\u00a0SELECT 1',
    '',
  ];
  it.each(refused.flatMap((sql) => [[sql, 'read'] as const, [sql, 'write'] as const]))('refuses %j in %s mode', (sql, mode) => {
    expect(refusal(() => gate(sql, mode)).code).toBe('data_invalid');
  });
  it('refuses a NUL anywhere, which SQLite would read as the end of the statement', () => {
    const e = refusal(() => gate('SELECT 1\u0000; DELETE FROM t', 'read'));
    expect(e.details).toEqual([{ path: 'body.sql', message: 'The SQL contains a NUL character.' }]);
  });
  it('admits the statement kinds of each mode, past comments', () => {
    for (const sql of ['SELECT 1', 'VALUES (1)', '/* c */ WITH x AS (SELECT 1) SELECT * FROM x']) expect(() => gate(sql, 'read')).not.toThrow();
    for (const sql of ['INSERT INTO t (a) VALUES (1)', 'REPLACE INTO t (a) VALUES (1)', 'UPDATE t SET a = 1', 'DELETE FROM t', '-- c\nWITH x AS (SELECT 1) DELETE FROM t'])
      expect(() => gate(sql, 'write')).not.toThrow();
  });
});

describe('layer 2, the shadow, alone', () => {
  const shadow = new ShadowSchema(SCHEMA);
  afterAll(() => shadow.close());
  const writes: [string, string][] = [
    ["UPDATE orders SET _id = 'x'", '_id'],
    ['UPDATE orders SET "_version" = 9', '_version'],
    ["UPDATE orders SET [_CREATED_AT] = 'x'", '_created_at'],
    ["UPDATE orders SET `_updated_at` = 'x'", '_updated_at'],
    ["UPDATE orders SET '_id' = 'x'", '_id'],
    ["UPDATE orders SET (item, _version) = ('a', 2)", '_version'],
    ["UPDATE orders AS \u00a0WHERE SET item = \u00a0WHERE.item, _version = 99, _id = 'not-a-uuid', _created_at = 'garbage'", '_version'],
    ["INSERT INTO orders (item, qty, _id) VALUES ('a', 1, 'x')", '_id'],
    ["INSERT INTO orders AS \u3000x (item, qty) VALUES ('a', 1) ON CONFLICT (qty) DO UPDATE SET item = \u3000x.item, _version = 99", '_version'],
    ["REPLACE INTO orders (_id, item, qty) VALUES ('x', 'a', 1)", '_id'],
    ['UPDATE orders SET rowid = 5', 'rowid'],
    ['UPDATE orders SET OID = 5', 'oid'],
    ['UPDATE orders SET "_rowid_" = 5', '_rowid_'],
    ["INSERT INTO orders (rowid, item, qty) VALUES (100, 'a', 1)", 'rowid'],
  ];
  it.each(writes)('refuses %j, naming %s', (sql, column) => {
    const e = refusal(() => checkShadow(shadow, sql, []));
    expect(e.code).toBe('data_invalid');
    expect(e.message.toLowerCase()).toContain(column);
  });
  it('refuses a positional INSERT that would write the system columns', () => {
    expect(refusal(() => checkShadow(shadow, "INSERT INTO orders VALUES ('x', 1, 'a', 'b', 'item', 1)", [])).message).toMatch(/Name the columns/);
    expect(refusal(() => checkShadow(shadow, 'INSERT INTO orders SELECT * FROM orders', [])).message).toMatch(/Name the columns/);
  });
  it('refuses PRAGMA, ATTACH and DETACH on its own connection, before the real file compiles them', () => {
    for (const sql of ['PRAGMA writable_schema = 1', 'PRAGMA foreign_keys = OFF', "ATTACH ':memory:' AS x", 'DETACH main', 'PRAGMA user_version = 3']) {
      expect(refusal(() => checkShadow(shadow, sql, [])).code, sql).toBe('data_invalid');
    }
  });
  it('lets reads of the system columns and rowids through, and writes that leave them alone', () => {
    for (const sql of [
      'SELECT rowid, oid, _rowid_, _id, _version FROM orders',
      "UPDATE orders SET item = 'b' WHERE rowid = 1 RETURNING rowid, _id, _version",
      "INSERT INTO orders (item, qty) VALUES ('a', 1) ON CONFLICT (qty) DO UPDATE SET item = excluded.item",
      "INSERT INTO orders (item, qty) VALUES ('a', 1) ON CONFLICT (_id) DO NOTHING",
      "UPDATE orders INDEXED BY orders_item_idx SET qty = 2 WHERE item = 'a'",
      'DELETE FROM orders WHERE _version > 1',
    ]) {
      expect(() => checkShadow(shadow, sql, []), sql).not.toThrow();
    }
  });
  it('a table with a column named rowid keeps it writable: it is a column like any other', () => {
    const own = new ShadowSchema({ tables: { t: { columns: { rowid: { type: 'integer' } } } } });
    try {
      expect(() => checkShadow(own, 'UPDATE t SET rowid = 5', [])).not.toThrow();
      expect(refusal(() => checkShadow(own, 'UPDATE t SET oid = 5', [])).message).toMatch(/oid/);
    } finally {
      own.close();
    }
  });
});

describe('layer 3, the mode, alone', () => {
  const db = scratch();
  afterAll(() => db.close());
  it('refuses a write in read mode and a read in write mode', () => {
    expect(refusal(() => checkMode(db.prepare('DELETE FROM t'), 'read')).message).toMatch(/writes/);
    expect(refusal(() => checkMode(db.prepare('WITH x AS (SELECT 1) INSERT INTO t (a) SELECT 1 FROM x'), 'read')).message).toMatch(/writes/);
    expect(refusal(() => checkMode(db.prepare('SELECT 1'), 'write')).message).toMatch(/does not write/);
    expect(() => checkMode(db.prepare('SELECT * FROM t'), 'read')).not.toThrow();
    expect(() => checkMode(db.prepare('UPDATE t SET a = 1'), 'write')).not.toThrow();
  });
});

describe('layer 4, the compiled program, alone', () => {
  const db = scratch();
  afterAll(() => db.close());
  // Compiled on a throwaway connection: a PRAGMA takes effect when it is prepared.
  const forbidden = [
    "ATTACH ':memory:' AS x",
    'DETACH main',
    'PRAGMA writable_schema = 1',
    'PRAGMA foreign_keys = OFF',
    'PRAGMA user_version = 3',
    'PRAGMA journal_mode = DELETE',
    'VACUUM',
    'BEGIN',
    'COMMIT',
    'SAVEPOINT s',
    'CREATE TABLE x (a)',
    'CREATE INDEX ix ON t (a)',
    'DROP TABLE t',
    'ANALYZE',
    "SELECT load_extension('/tmp/nothing')",
    "SELECT * FROM json_each('[1]')",
    "SELECT * FROM pragma_table_info('t')",
  ];
  it.each(forbidden)('refuses the program of %j', (sql) => {
    expect(refusal(() => checkOps(program(db, sql))).code).toBe('data_invalid');
  });
  it('passes the programs of queries and DML', () => {
    for (const sql of [
      'SELECT a FROM t WHERE b > 1',
      "INSERT INTO t (a) VALUES ('x') RETURNING a",
      'UPDATE t SET a = b + 1',
      'DELETE FROM t',
      'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5) SELECT x FROM c',
    ]) {
      expect(() => checkOps(program(db, sql)), sql).not.toThrow();
    }
  });
  it('refuses another schema (an attached database, temp) and internal tables by root page', () => {
    const other = scratch();
    try {
      other.exec("ATTACH ':memory:' AS side; CREATE TABLE side.s (a); CREATE TEMP TABLE tt (a)");
      const roots = new Map((other.prepare('SELECT tbl_name, rootpage FROM sqlite_schema WHERE rootpage > 0').all() as { tbl_name: string; rootpage: number }[]).map((r) => [r.rootpage, r.tbl_name]));
      const tables = new Set(['t']);
      expect(programTables(program(other, 'SELECT * FROM t'), roots, tables)).toEqual({ reads: new Set(['t']), writes: new Set() });
      expect(programTables(program(other, 'DELETE FROM t'), roots, tables)).toEqual({ reads: new Set(), writes: new Set(['t']) });
      expect(refusal(() => programTables(program(other, 'SELECT * FROM side.s'), roots, tables)).message).toMatch(/only this database/);
      expect(refusal(() => programTables(program(other, 'INSERT INTO side.s (a) VALUES (1)'), roots, tables)).message).toMatch(/only this database/);
      expect(refusal(() => programTables(program(other, 'SELECT * FROM tt'), roots, tables)).message).toMatch(/only this database/);
      expect(refusal(() => programTables(program(other, 'SELECT * FROM sqlite_schema'), roots, tables)).message).toMatch(/internal to SQLite/);
      other.exec('CREATE TABLE _svc_meta (k)');
      const roots2 = new Map((other.prepare('SELECT tbl_name, rootpage FROM sqlite_schema WHERE rootpage > 0').all() as { tbl_name: string; rootpage: number }[]).map((r) => [r.rootpage, r.tbl_name]));
      expect(refusal(() => programTables(program(other, 'SELECT * FROM _svc_meta'), roots2, tables)).code).toBe('data_not_found');
    } finally {
      other.close();
    }
  });
});

/** Every character that is whitespace to someone: Unicode's Zs, Zl, Zp and Cf, JavaScript's \s, U+0085 and U+180E. */
function oddCharacters(): string[] {
  const out = new Set<string>(['\u0085', '\u180e', '\t', '\n', '\v', '\f', '\r', ' ']);
  const re = /^[\p{Zs}\p{Zl}\p{Zp}\p{Cf}\s]$/u;
  for (let cp = 0x80; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    if (re.test(c)) out.add(c);
  }
  return [...out];
}

describe('system columns and rowids through a real file, under any spelling', () => {
  let file: DataFile;
  let raw: Database.Database;
  const all = { read: '*' as const, write: '*' as const };
  const write = (sql: string): unknown => file.query({ sql, params: [], mode: 'write', maxRows: 10, grants: all } satisfies QueryRequest);
  const snapshot = () => JSON.stringify(raw.prepare('SELECT rowid, * FROM orders ORDER BY rowid').all());
  beforeAll(() => {
    const path = join(dir, 'sweep.sqlite');
    file = new DataFile(path, systemClock, SCHEMA);
    file.batch([
      {
        op: 'insert',
        table: 'orders',
        rows: [
          { item: 'a', qty: 1 },
          { item: 'b', qty: 2 },
        ],
      },
    ]);
    // The same file, read by a plain connection: what SQLite itself would compile without the guard.
    raw = new Database(path, { readonly: true });
  });
  afterAll(() => {
    raw.close();
    file.close();
  });

  const SYSTEM = ['_id', '_version', '_created_at', '_updated_at', 'rowid', 'oid', '_rowid_'];
  const value = (col: string) => (col.includes('rowid') || col === 'oid' || col === '_version' ? '99' : "'garbage'");

  /** Refused with 400 data_invalid, nothing changed; named when the file alone would have compiled it. */
  function refusedUnchanged(sql: string, column: string): void {
    const before = snapshot();
    const e = refusal(() => write(sql));
    expect(e.code, sql).toBe('data_invalid');
    expect(e.status, sql).toBe(400);
    let compiles = true;
    try {
      raw.prepare(sql);
    } catch {
      compiles = false;
    }
    if (compiles) expect(e.message.toLowerCase(), JSON.stringify(sql)).toContain(column.toLowerCase());
    expect(snapshot(), sql).toBe(before);
  }

  const chars = oddCharacters();
  it(`covers ${chars.length} characters`, () => {
    // Zs (17) + Zl + Zp + Cf (170 in Unicode 15) and the ASCII whitespace: well over a hundred.
    expect(chars.length).toBeGreaterThan(150);
  });

  it('an alias made of (or hidden by) any odd character never hides a SET target, in UPDATE or upsert', () => {
    let compiledByFile = 0;
    for (const c of chars) {
      for (const col of SYSTEM) {
        const alias = `${c}WHERE`;
        const forms = [
          `UPDATE orders AS ${alias} SET item = ${alias}.item, ${col} = ${value(col)}`,
          `UPDATE orders AS ${alias} SET (item, ${col}) = (${alias}.item, ${value(col)})`,
          `INSERT INTO orders AS ${alias} (item, qty) VALUES ('a', 1) ON CONFLICT (qty) DO UPDATE SET item = ${alias}.item, ${col} = ${value(col)}`,
          `UPDATE orders SET item = 'x',${c}${col} = ${value(col)}`,
          `UPDATE orders SET item = 'x', ${col}${c}= ${value(col)}`,
        ];
        for (const sql of forms) {
          try {
            raw.prepare(sql);
            compiledByFile++;
          } catch {
            // Not SQL to SQLite either (an ASCII space turns the alias into the keyword WHERE).
          }
          refusedUnchanged(sql, col);
        }
      }
    }
    // Most of these are real statements to SQLite: the sweep is not just a syntax-error sweep.
    expect(compiledByFile).toBeGreaterThan(chars.length * SYSTEM.length * 2);
  });

  it('every quoting form of every system column, in INSERT, UPDATE, upsert and REPLACE', () => {
    for (const col of SYSTEM) {
      const spellings = [col, col.toUpperCase(), `"${col}"`, `[${col}]`, `\`${col}\``, `'${col}'`, `"${col.toUpperCase()}"`, `"${col[0]}"||"${col.slice(1)}"`];
      for (const s of spellings) {
        refusedUnchanged(`UPDATE orders SET ${s} = ${value(col)}`, col);
        refusedUnchanged(`UPDATE orders AS o SET ${s} = ${value(col)} WHERE o.qty = 1`, col);
        refusedUnchanged(`UPDATE orders SET item = 'q', (${s}) = (${value(col)})`, col);
        refusedUnchanged(`INSERT INTO orders (item, qty, ${s}) VALUES ('z', 9, ${value(col)})`, col);
        refusedUnchanged(`INSERT INTO main.orders AS o (item, qty) VALUES ('a', 1) ON CONFLICT (qty) DO UPDATE SET ${s} = ${value(col)}`, col);
        refusedUnchanged(`REPLACE INTO orders (item, qty, ${s}) VALUES ('a', 1, ${value(col)})`, col);
        refusedUnchanged(`UPDATE orders SET orders.${s} = ${value(col)}`, col);
      }
    }
  });

  it('reads of the system columns and rowids, and writes that leave them alone, still work', () => {
    expect(write("UPDATE orders SET item = 'c' WHERE rowid = 1 RETURNING rowid, _id, item")).toMatchObject({ answer: { rows: [{ rowid: 1, item: 'c' }], rowCount: 1 } });
    expect(write("INSERT INTO orders (item, qty) VALUES ('d', 2) ON CONFLICT (qty) DO UPDATE SET item = excluded.item RETURNING item")).toMatchObject({ answer: { rows: [{ item: 'd' }] } });
    // The trigger bumped each changed row's version: an expectedVersion check sees both changes.
    expect(raw.prepare('SELECT item, _version FROM orders ORDER BY rowid').all()).toEqual([
      { item: 'c', _version: 2 },
      { item: 'd', _version: 2 },
    ]);
  });
});
