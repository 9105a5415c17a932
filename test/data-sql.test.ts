import Database from '../src/db/sqlite.js';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { SHOP } from './data-fixtures.js';
import { DATA_PROVIDERS, describeProviders, onProvider, type DataProvider } from './data-providers.js';

// POST /api/v1/data/{resource}/query: the reference's body rules at and past each bound, results,
// and the hostile statements, each refused with a 4xx and shown to have changed nothing. The
// first suite runs on both providers (each in its own SQL: `?` or `$n`, SQLite's or Postgres's
// functions); SQLite's own admission (rowids, its hostile table) is the second; Postgres's is
// data-postgres.test.ts.

/** A daemon on provider `p` with the shop (5 customers) and a second database holding a secret. */
async function setup(p: DataProvider): Promise<{ d: TestDaemon; shopId: string; otherId: string }> {
  const d = await startTestDaemon({ config: onProvider(p) });
  const shop = await d.api('POST', '/api/v1/data', { body: { name: 'shop', schema: SHOP } });
  const other = await d.api('POST', '/api/v1/data', { body: { name: 'vault-like', schema: { tables: { secrets: { columns: { value: { type: 'text' } } } } } } });
  await d.api('POST', '/api/v1/data/vault-like/transactions', { body: { operations: [{ op: 'insert', table: 'secrets', values: { value: 'hunter2' } }] } });
  const r = await d.api('POST', '/api/v1/data/shop/transactions', {
    body: { operations: [{ op: 'insert', table: 'customers', rows: Array.from({ length: 5 }, (_, i) => ({ email: `c${i}@x.io`, name: `C${i}`, vip: i % 2 === 0, meta: { i } })) }] },
  });
  expect(r.status).toBe(200);
  return { d, shopId: shop.body.data.id, otherId: other.body.data.id };
}

describeProviders('scoped SQL', (p) => {
  let d: TestDaemon;
  const pg = p.name === 'postgres';
  /** Parameter n (from 1) as the provider spells it. */
  const P = (n: number) => (pg ? `$${n}` : '?');
  beforeAll(async () => {
    ({ d } = await setup(p));
  });
  afterAll(async () => {
    await d.close();
  });

  const q = (body: Record<string, unknown>, db = 'shop') => d.api('POST', `/api/v1/data/${db}/query`, { body });

  it('reads rows with types from the schema, maxRows and truncated', async () => {
    const r = await q({ sql: `SELECT email, vip, meta FROM customers WHERE vip = ${P(1)} ORDER BY email`, params: [true] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toEqual({
      rows: [
        { email: 'c0@x.io', vip: true, meta: { i: 0 } },
        { email: 'c2@x.io', vip: true, meta: { i: 2 } },
        { email: 'c4@x.io', vip: true, meta: { i: 4 } },
      ],
      rowCount: 3,
      truncated: false,
    });
    const cut = await q({ sql: 'SELECT email FROM customers ORDER BY email', maxRows: 2 });
    expect(cut.body.data).toMatchObject({ rowCount: 2, truncated: true });
    const exact = await q({ sql: 'SELECT email FROM customers', maxRows: 5 });
    expect(exact.body.data).toMatchObject({ rowCount: 5, truncated: false });
  });

  it('a column named like an Object builtin is a column like any other', async () => {
    const r = await q({ sql: 'SELECT 1 AS __proto__, \'x\' AS constructor, email AS "hasOwnProperty" FROM customers ORDER BY email LIMIT 1' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(JSON.stringify(r.body.data.rows)).toBe('[{"__proto__":1,"constructor":"x","hasOwnProperty":"c0@x.io"}]');
  });

  it('writes with mode write: rowCount is rows changed, RETURNING returns them', async () => {
    const w = await q({ sql: "UPDATE customers SET name = 'X' WHERE NOT vip", mode: 'write' });
    expect(w.body.data).toEqual({ rows: [], rowCount: 2, truncated: false });
    const ret = await q({ sql: "INSERT INTO customers (email) VALUES ('n1@x.io'), ('n2@x.io') RETURNING email, _version", mode: 'write', maxRows: 1 });
    expect(ret.body.data).toEqual({ rows: [{ email: 'n1@x.io', _version: 1 }], rowCount: 2, truncated: true });
    const v = await q({ sql: "SELECT _version FROM customers WHERE email = 'c1@x.io'" });
    expect(v.body.data.rows[0]._version).toBe(2); // raw updates bump the version too
    const c = await q({ sql: "INSERT INTO customers (email) VALUES ('c1@x.io')", mode: 'write' });
    expect(c.status).toBe(422);
    expect(c.body).toMatchObject({ code: 'data_constraint' });
    expect(c.body.error).toMatch(/^email: /);
    const fk = await q({ sql: "INSERT INTO orders (customer, total) VALUES ('00000000-0000-4000-8000-000000000000', 1)", mode: 'write' });
    expect(fk.status).toBe(422);
    expect(fk.body.error).toMatch(/^customer: /);
    const type = await q({ sql: "INSERT INTO orders (customer, total) VALUES ((SELECT _id FROM customers LIMIT 1), 'lots')", mode: 'write' });
    // Pinned difference (docs/data.md): Postgres reads the literal for the column's type, and its
    // error names the type, not the column: 400, where SQLite's STRICT table answers 422.
    expect(type.status).toBe(pg ? 400 : 422);
    expect(type.body.error).toMatch(pg ? /invalid input syntax for type double precision/ : /total/);
  });

  it('limits of the body, at and just past each bound', async () => {
    const pad = (n: number) => 'SELECT 1' + ' '.repeat(n - 8);
    const many = Array.from({ length: 1000 }, (_, i) => `(${P(i + 1)})`).join(',');
    const cases: [Record<string, unknown>, number][] = [
      [{ sql: pad(65536) }, 200],
      [{ sql: pad(65537) }, 400],
      [{ sql: '' }, 400],
      [{ sql: `SELECT CAST(${P(1)} AS TEXT) AS a`, params: [null] }, 200],
      [{ sql: `SELECT count(*) FROM (VALUES ${many}) AS v`, params: Array(1000).fill(1) }, 200],
      [{ sql: 'SELECT 1', params: Array(1001).fill(1) }, 400],
      [{ sql: `SELECT length(${P(1)}) AS n`, params: ['x'.repeat(65536)] }, 200],
      [{ sql: `SELECT length(${P(1)}) AS n`, params: ['x'.repeat(65537)] }, 400],
      [{ sql: 'SELECT ?', params: [{ a: 1 }] }, 400],
      [{ sql: 'SELECT ?', params: [[1]] }, 400],
      [{ sql: 'SELECT 1', maxRows: 1 }, 200],
      [{ sql: 'SELECT 1', maxRows: 200 }, 200],
      [{ sql: 'SELECT 1', maxRows: 0 }, 400],
      [{ sql: 'SELECT 1', maxRows: 201 }, 400],
      [{ sql: 'SELECT 1', maxRows: 1.5 }, 400],
      [{ sql: 'SELECT 1', mode: 'admin' }, 400],
      [{ sql: 'SELECT 1', idempotencyKey: '!'.repeat(200) }, 200],
      [{ sql: 'SELECT 1', idempotencyKey: '~'.repeat(201) }, 400],
      [{ sql: 'SELECT 1', idempotencyKey: '' }, 400],
      [{ sql: 'SELECT 1', idempotencyKey: 'a b' }, 400],
      [{ sql: 'SELECT 1', idempotencyKey: 'é' }, 400],
      [{ sql: 'SELECT 1', extra: true }, 400],
    ];
    for (const [body, status] of cases) {
      const r = await q(body);
      expect(r.status, `${JSON.stringify(body).slice(0, 80)} → ${JSON.stringify(r.body).slice(0, 200)}`).toBe(status);
      if (status === 400) expect(r.body).toMatchObject({ ok: false, code: 'data_invalid' });
    }
    const one = await q({ sql: `SELECT length(${P(1)}) AS n`, params: ['x'.repeat(65536)] });
    expect(one.body.data.rows[0].n).toBe(65536);
  });

  it('a result of 1 MiB passes; one byte more is 413 data_limit', async () => {
    // Each row is measured as JSON: {"a":"…"} is 8 characters around the value.
    const big = pg ? "repeat('0', $1::int)" : 'substr(hex(zeroblob(600000)), 1, ?)';
    const at = await q({ sql: `SELECT ${big} AS a`, params: [1048576 - 8] });
    expect(at.status, JSON.stringify(at.body).slice(0, 200)).toBe(200);
    const past = await q({ sql: `SELECT ${big} AS a`, params: [1048576 - 7] });
    expect(past.status).toBe(413);
    expect(past.body.code).toBe('data_limit');
    const pad = pg ? "repeat('0', 6000)" : 'hex(zeroblob(3000))';
    const many = await q({ sql: `WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 200) SELECT n, ${pad} AS pad FROM r` });
    expect(many.status).toBe(413);
  });

  it('explains SQL that does not compile or bind, with 400 data_invalid', async () => {
    // Pinned difference (docs/data.md): each provider's own words for what is wrong.
    for (const [body, re] of [
      [{ sql: 'SELECT 1 2' }, /syntax error/],
      [{ sql: 'SELEC 1' }, pg ? /syntax error at or near "SELEC"/ : /SELEC is not allowed/],
      [{ sql: 'SELECT nope FROM customers' }, pg ? /column "nope" does not exist/ : /no such column: nope/],
      [{ sql: `SELECT ${P(1)}::text, ${P(2)}::text`.replace(/::text/g, pg ? '::text' : ''), params: [1] }, pg ? /uses \$1 to \$2 but 1 param was sent/ : /parameters/],
      [{ sql: 'SELECT :name' }, pg ? /syntax error/ : /parameters/],
      ...(pg ? [] : ([[{ sql: 'SELECT nofunc(1)' }, /no such function/]] as const)),
    ] as const) {
      const r = await q(body);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.code).toBe('data_invalid');
      expect(r.body.error).toMatch(re);
    }
    // Pinned: on PostgreSQL a function outside the allow-list is refused on purpose, before the server sees it.
    if (pg) expect((await q({ sql: 'SELECT nofunc(1)' })).body).toMatchObject({ code: 'data_forbidden', error: expect.stringContaining('nofunc() is not available') });
  });

  it('a NUL in the SQL is refused, naming body.sql, instead of cutting the statement there', async () => {
    const r = await q({ sql: "UPDATE customers SET name = 'n'\u0000, _version = 99", mode: 'write' });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'data_invalid', details: [{ path: 'body.sql' }] });
    const v = await q({ sql: "SELECT count(*) AS n FROM customers WHERE name = 'n'" });
    expect(v.body.data.rows[0].n).toBe(0);
  });

  it('answers 401 without a key and 404 for an unknown database', async () => {
    expect((await d.api('POST', '/api/v1/data/shop/query', { body: { sql: 'SELECT 1' }, key: null })).status).toBe(401);
    expect((await q({ sql: 'SELECT 1' }, 'nope')).status).toBe(404);
  });
});

describe("scoped SQL: SQLite's own admission", () => {
  let d: TestDaemon;
  let shopFile = '';
  let otherFile = '';
  beforeAll(async () => {
    const s = await setup(DATA_PROVIDERS[0]!);
    d = s.d;
    shopFile = join(d.root, '.svc', 'data', `${s.shopId}.sqlite`);
    otherFile = join(d.root, '.svc', 'data', `${s.otherId}.sqlite`);
  });
  afterAll(async () => {
    await d.close();
  });

  const q = (body: Record<string, unknown>, db = 'shop') => d.api('POST', `/api/v1/data/${db}/query`, { body });

  it('an alias SQLite reads as a name (U+00A0 WHERE) hides no system column: the expectedVersion check still sees the change', async () => {
    const [row] = (await q({ sql: "SELECT _id, _version FROM customers WHERE email = 'c3@x.io'" })).body.data.rows;
    // Another writer changes the row: its version moves on.
    expect((await q({ sql: "UPDATE customers SET name = 'by another writer' WHERE _id = ?", params: [row._id], mode: 'write' })).status).toBe(200);
    // The attack: change the row and put the old version back, so a stale update would pass.
    for (const sql of [
      `UPDATE customers AS \u00a0WHERE SET name = \u00a0WHERE.name, _version = ${row._version}, _id = 'not-a-uuid', _created_at = 'garbage' WHERE _id = ?`,
      `INSERT INTO customers AS \u3000x (email) VALUES ('c3@x.io') ON CONFLICT (email) DO UPDATE SET name = \u3000x.name, _version = ${row._version} WHERE \u3000x._id = ?`,
    ]) {
      const r = await q({ sql, params: [row._id], mode: 'write' });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.code).toBe('data_invalid');
      expect(r.body.error).toMatch(/_version is a system column/);
    }
    const stale = await d.api('POST', '/api/v1/data/shop/transactions', {
      body: { operations: [{ op: 'update', table: 'customers', id: row._id, expectedVersion: row._version, values: { name: 'stale' } }] },
    });
    expect(stale.status).toBe(409);
    expect((await q({ sql: 'SELECT name FROM customers WHERE _id = ?', params: [row._id] })).body.data.rows[0].name).toBe('by another writer');
  });

  it('rowids are read, never set: SET rowid, oid, _rowid_ and INSERT with a rowid are refused', async () => {
    for (const sql of [
      'UPDATE customers SET rowid = rowid + 1000',
      'UPDATE customers SET oid = 1',
      'UPDATE customers SET "_ROWID_" = 1',
      "INSERT INTO customers (rowid, email) VALUES (1, 'r1@x.io')",
      "UPDATE customers SET (name, rowid) = ('a', 99) WHERE rowid = 1",
    ]) {
      const r = await q({ sql, mode: 'write' });
      expect(r.status, sql).toBe(400);
      expect(r.body.error, sql).toMatch(/rowid, which no statement may set/);
    }
    const ok = await q({ sql: "UPDATE customers SET name = 'by rowid' WHERE rowid = ? RETURNING rowid, name", params: [1], mode: 'write' });
    expect(ok.body.data.rows).toEqual([{ rowid: 1, name: 'by rowid' }]);
  });

  it('a timestamp in another spelling than the stored one is 422 naming the column and the conversion; converted, it compares right', async () => {
    const ins = "INSERT INTO orders (customer, total, placed) VALUES ((SELECT _id FROM customers WHERE email = 'c0@x.io'), 1, ?) RETURNING placed";
    const r = await q({ sql: ins, params: ['2026-01-02T03:04:05+01:00'], mode: 'write' });
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body).toMatchObject({ code: 'data_constraint', details: [{ path: 'placed' }] });
    expect(r.body.error).toMatch(/^orders\.placed: must be UTC with milliseconds, like 2026-01-31T11:00:00\.000Z \(in SQL, strftime\('%Y-%m-%dT%H:%M:%fZ', x\)/);
    const ok = await q({ sql: ins.replace('?', "strftime('%Y-%m-%dT%H:%M:%fZ', ?)"), params: ['2026-01-02T03:04:05+01:00'], mode: 'write' });
    expect(ok.body.data.rows).toEqual([{ placed: '2026-01-02T02:04:05.000Z' }]);
    const before = await q({ sql: "SELECT count(*) AS n FROM orders WHERE placed < '2026-01-02T02:30:00.000Z'" });
    expect(before.body.data.rows[0].n).toBe(1);
  });

  /** Everything a hostile statement could change: both files' schema and rows, the state DB's schema, the files on disk. */
  function fingerprint(): string {
    const dump = (file: string) => {
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        const tables = db.prepare('SELECT name, sql FROM sqlite_schema ORDER BY name').all() as { name: string; sql: string }[];
        const rows = tables.filter((t) => t.sql?.startsWith('CREATE TABLE')).map((t) => [t.name, db.prepare(`SELECT * FROM "${t.name}" ORDER BY rowid`).all()]);
        return { tables, rows, journal: db.pragma('journal_mode', { simple: true }) };
      } finally {
        db.close();
      }
    };
    const files = (dir: string) =>
      readdirSync(dir)
        .filter((f) => !f.endsWith('-wal') && !f.endsWith('-shm'))
        .sort();
    const stateSchema = new Database(join(d.root, '.svc', 'state.sqlite'), { readonly: true });
    const st = stateSchema.prepare('SELECT name, sql FROM sqlite_schema ORDER BY name').all();
    stateSchema.close();
    return JSON.stringify({ shop: dump(shopFile), other: dump(otherFile), st, data: files(join(d.root, '.svc', 'data')), svc: files(join(d.root, '.svc')), root: files(d.root) });
  }

  it('refuses every hostile statement with a 4xx and leaves everything as it was', async () => {
    const state = join(d.root, '.svc', 'state.sqlite');
    const fresh = join(d.root, 'fresh.sqlite');
    const copy = join(d.root, 'copy.sqlite');
    const hostile: [string, 'read' | 'write'][] = [
      [`ATTACH DATABASE '${otherFile}' AS other`, 'read'],
      [`ATTACH DATABASE '${otherFile}' AS other`, 'write'],
      [`ATTACH '${state}' AS st`, 'write'],
      [`ATTACH '${fresh}' AS fresh`, 'write'],
      [`ATTACH 'file:${fresh}?mode=rwc' AS fresh`, 'read'],
      ['DETACH main', 'write'],
      ['DETACH DATABASE other', 'read'],
      ['PRAGMA writable_schema = ON', 'write'],
      ['PRAGMA writable_schema = 1', 'read'],
      ['PRAGMA journal_mode = DELETE', 'write'],
      ['PRAGMA foreign_keys = OFF', 'write'],
      ['PRAGMA database_list', 'read'],
      ['PRAGMA table_info(customers)', 'read'],
      [`PRAGMA temp_store_directory = '${d.root}'`, 'write'],
      ['SELECT * FROM pragma_database_list', 'read'],
      ["SELECT * FROM pragma_table_info('customers')", 'read'],
      ['SELECT * FROM dbstat', 'read'],
      ["SELECT * FROM json_each('[1]')", 'read'],
      ['VACUUM', 'write'],
      [`VACUUM INTO '${copy}'`, 'write'],
      [`VACUUM INTO '${copy}'`, 'read'],
      ["SELECT load_extension('/tmp/nothing')", 'read'],
      ["SELECT load_extension('/tmp/nothing')", 'write'],
      ['SELECT 1; DELETE FROM customers', 'read'],
      ['DELETE FROM customers WHERE 0; DELETE FROM customers', 'write'],
      ['SELECT 1 /* ; */; DELETE FROM customers', 'read'],
      ["SELECT ';'; DELETE FROM customers", 'read'],
      ["SELECT '; DELETE FROM customers'; DELETE FROM customers", 'read'],
      ['-- DELETE FROM customers\nSELECT 1; DELETE FROM customers', 'read'],
      ['/* comment */ DELETE FROM customers', 'read'],
      ['CREATE TABLE x (a)', 'write'],
      ['CREATE TEMP TABLE x (a)', 'write'],
      ['CREATE VIEW v AS SELECT 1', 'write'],
      ['CREATE INDEX ix ON customers (name)', 'write'],
      ['CREATE TRIGGER tr AFTER INSERT ON customers BEGIN DELETE FROM customers; END', 'write'],
      ['DROP TABLE customers', 'write'],
      ['ALTER TABLE customers ADD COLUMN z TEXT', 'write'],
      ['ALTER TABLE customers RENAME TO c2', 'write'],
      ['REINDEX', 'write'],
      ['ANALYZE', 'write'],
      ['DELETE FROM customers', 'read'],
      ["UPDATE customers SET name = 'x'", 'read'],
      ["INSERT INTO customers (email) VALUES ('r@x.io') RETURNING *", 'read'],
      ['WITH x AS (SELECT 1) DELETE FROM customers', 'read'],
      ["WITH x AS (SELECT 1) INSERT INTO customers (email) SELECT 'w@x.io' FROM x", 'read'],
      ['BEGIN', 'read'],
      ['BEGIN IMMEDIATE', 'write'],
      ['COMMIT', 'write'],
      ['END', 'read'],
      ['ROLLBACK', 'write'],
      ['SAVEPOINT s', 'write'],
      ['RELEASE s', 'read'],
      ["UPDATE sqlite_master SET sql = '' WHERE name = 'customers'", 'write'],
      ["DELETE FROM sqlite_schema WHERE name = 'customers'", 'write'],
      ["INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES ('table', 'x', 'x', 0, '')", 'write'],
      ['SELECT * FROM sqlite_schema', 'read'],
      ['SELECT * FROM sqlite_master', 'read'],
      ["UPDATE customers SET _id = 'x'", 'write'],
      ['UPDATE customers SET _version = 99', 'write'],
      ['UPDATE customers SET "_version" = 99', 'write'],
      ["UPDATE customers SET name = 'a', _created_at = 'x'", 'write'],
      ["UPDATE customers SET (name, _version) = ('a', 5)", 'write'],
      ["INSERT INTO customers (_id, email) VALUES ('x', 'id@x.io')", 'write'],
      ["INSERT INTO customers (email, `_version`) VALUES ('v@x.io', 9)", 'write'],
      ["INSERT INTO customers VALUES ('x', 1, 'a', 'b', 'e@x.io', null, 0, null)", 'write'],
      ["INSERT INTO customers (email) VALUES ('c0@x.io') ON CONFLICT (email) DO UPDATE SET _version = 7", 'write'],
      ["REPLACE INTO customers (_id, email) VALUES ('x', 'c0@x.io')", 'write'],
      ["UPDATE customers AS \u00a0WHERE SET name = \u00a0WHERE.name, _version = 99, _id = 'not-a-uuid', _created_at = 'garbage'", 'write'],
      ['UPDATE customers AS \ufeffo SET name = \ufeffo.name, "_VERSION" = 99', 'write'],
      ["INSERT INTO customers AS \u2028x (email) VALUES ('c0@x.io') ON CONFLICT (email) DO UPDATE SET _updated_at = 'garbage'", 'write'],
      ['INSERT INTO customers SELECT * FROM customers', 'write'],
      ['UPDATE customers SET rowid = rowid + 100', 'write'],
      ["INSERT INTO customers (rowid, email) VALUES (1000, 'r@x.io')", 'write'],
      ["ATTACH/**/'x' AS x", 'read'],
      ['SELECT * FROM secrets', 'read'],
      ["INSERT INTO secrets (value) VALUES ('x')", 'write'],
      ['SELECT * FROM _svc_idempotency', 'read'],
      ["UPDATE _svc_meta SET value = '{}'", 'write'],
      ['DELETE FROM _svc_migrations', 'write'],
      ['SELECT 1', 'write'],
    ];
    for (const [sql, mode] of hostile) {
      const before = fingerprint();
      const r = await q({ sql, mode });
      expect(r.status, `${mode}: ${sql} → ${JSON.stringify(r.body)}`).toBeGreaterThanOrEqual(400);
      expect(r.status, `${mode}: ${sql}`).toBeLessThan(500);
      expect(r.body.ok).toBe(false);
      // Nothing of SQLite's internals, no path, no other database's name.
      expect(r.body.error).not.toMatch(/SQLITE_|\.svc|vault-like|\/tmp\/svc-test/);
      expect(fingerprint(), `${mode}: ${sql} changed something`).toBe(before);
    }
    expect(existsSync(fresh)).toBe(false);
    expect(existsSync(copy)).toBe(false);
    // Nothing was attached either: the other database's table is still unknown here.
    const after = await q({ sql: 'SELECT * FROM other.secrets' });
    expect(after.status).toBeGreaterThanOrEqual(400);
    expect(after.status).toBeLessThan(500);
  });
});

describe('SQLite under the garbage collector', () => {
  // better-sqlite3 12 built for Node 24 aborted the process ("Assertion failed: (env) != nullptr"
  // under Statement::~Statement) the first time a scavenge freed a statement, whatever its SQL (in
  // 5 rounds of this loop, 0.15 s): src/db/sqlite.ts uses node:sqlite there (and on 22.16+). A
  // process of its own, on this Node (the CI runs this file on 20, 22 and 24), prepares 2,000
  // statements that die young.
  it('statements freed by the collector do not take the process down', async () => {
    const script = `
      const { default: Database, SQLITE_PACKAGE } = await import(process.argv[1]);
      const db = new Database(':memory:');
      for (let round = 0; round < 40; round++) {
        for (let i = 0; i < 50; i++) db.prepare('SELECT 1');
        let junk = [];
        for (let i = 0; i < 20000; i++) junk.push({ i });
        junk = null;
        await new Promise((r) => setImmediate(r));
      }
      db.close();
      console.log(SQLITE_PACKAGE);
    `;
    const loader = new URL('../dist/src/db/sqlite.js', import.meta.url).pathname;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, loader], { timeout: 20_000 });
    const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
    expect(stdout.trim()).toBe(major >= 24 || (major === 22 && minor >= 16) ? 'node:sqlite' : 'better-sqlite3-12');
  });
});
