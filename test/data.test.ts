import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from '../src/db/sqlite.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { SHOP } from './data-fixtures.js';
import { describeProviders, onProvider } from './data-providers.js';
import { runCase, type ApiCase } from './scenarios.js';

// Application databases over HTTP, on each provider (SQLite files, a real PostgreSQL): databases,
// batches, errors and limits. What only one provider has (files, schemas) is tested on it alone.

const dataFiles = (d: TestDaemon) => readdirSync(join(d.root, '.svc', 'data')).filter((f) => f.endsWith('.sqlite'));

describeProviders('application databases', (p) => {
  let d: TestDaemon;
  let shopId = '';
  beforeAll(async () => {
    d = await startTestDaemon({ config: onProvider(p) });
  });
  afterAll(async () => {
    await d.close();
  });

  const tx = (ops: unknown[], extra: Record<string, unknown> = {}, db = 'shop') => d.api('POST', `/api/v1/data/${db}/transactions`, { body: { operations: ops, ...extra } });
  const sql = (body: Record<string, unknown>, db = 'shop') => d.api('POST', `/api/v1/data/${db}/query`, { body });

  const cases: ApiCase[] = [
    {
      name: 'create',
      method: 'POST',
      path: '/api/v1/data',
      body: { name: 'shop', schema: SHOP },
      status: 201,
      dataMatches: { name: 'shop', schemaVersion: 1 },
      onSuccess: (db) => (shopId = db.id),
      events: () => [{ name: 'data:created', data: { id: shopId, name: 'shop' } }],
    },
    { name: 'same name → 409', method: 'POST', path: '/api/v1/data', body: { name: 'shop', schema: SHOP }, status: 409, code: 'data_conflict', detailPath: 'body.name', events: [] },
    {
      name: 'name like a UUID',
      method: 'POST',
      path: '/api/v1/data',
      body: { name: 'a1b2c3d4-0000-4000-8000-000000000000', schema: SHOP },
      status: 400,
      code: 'data_invalid',
      detailPath: 'body.name',
    },
    { name: 'bad name', method: 'POST', path: '/api/v1/data', body: { name: 'Shop', schema: SHOP }, status: 400, code: 'data_invalid', detailPath: 'body.name' },
    { name: 'name at 63 chars', method: 'POST', path: '/api/v1/data', body: { name: 'a'.repeat(63), schema: { tables: { t: { columns: { a: { type: 'text' } } } } } }, status: 201 },
    { name: 'name at 64 chars', method: 'POST', path: '/api/v1/data', body: { name: 'a'.repeat(64), schema: SHOP }, status: 400, code: 'data_invalid', detailPath: 'body.name' },
    {
      name: 'bad identifier',
      method: 'POST',
      path: '/api/v1/data',
      body: { name: 'x1', schema: { tables: { 'Bad-Table': { columns: { a: { type: 'text' } } } } } },
      status: 400,
      code: 'data_invalid',
    },
    {
      name: 'identifier of 48 chars',
      method: 'POST',
      path: '/api/v1/data',
      body: { name: 'x2', schema: { tables: { ['t'.repeat(48)]: { columns: { ['c'.repeat(48)]: { type: 'text' } } } } } },
      status: 201,
    },
    {
      name: 'identifier of 49 chars',
      method: 'POST',
      path: '/api/v1/data',
      body: { name: 'x3', schema: { tables: { ['t'.repeat(49)]: { columns: { a: { type: 'text' } } } } } },
      status: 400,
      code: 'data_invalid',
    },
    { name: 'sqlite_ table', method: 'POST', path: '/api/v1/data', body: { name: 'x4', schema: { tables: { sqlite_x: { columns: { a: { type: 'text' } } } } } }, status: 400, code: 'data_invalid' },
    { name: 'unknown column type', method: 'POST', path: '/api/v1/data', body: { name: 'x5', schema: { tables: { t: { columns: { a: { type: 'blob' } } } } } }, status: 400, code: 'data_invalid' },
    {
      name: 'reference to a missing table',
      method: 'POST',
      path: '/api/v1/data',
      body: { name: 'x6', schema: { tables: { t: { columns: { a: { type: 'uuid', references: { table: 'nope', column: '_id' } } } } } } },
      status: 400,
      code: 'data_invalid',
      detailPath: 'body.schema.tables.t.columns.a.references.table',
    },
    {
      name: 'index on a missing column',
      method: 'POST',
      path: '/api/v1/data',
      body: { name: 'x7', schema: { tables: { t: { columns: { a: { type: 'text' } }, indexes: [{ columns: ['b'] }] } } } },
      status: 400,
      code: 'data_invalid',
    },
    {
      name: 'default of the wrong type',
      method: 'POST',
      path: '/api/v1/data',
      body: { name: 'x8', schema: { tables: { t: { columns: { a: { type: 'integer', default: 'x' } } } } } },
      status: 400,
      code: 'data_invalid',
      detailPath: 'body.schema.tables.t.columns.a.default',
    },
    { name: 'get by name', method: 'GET', path: '/api/v1/data/shop', status: 200, dataMatches: { name: 'shop', schemaVersion: 1 } },
    { name: 'get by id', method: 'GET', path: () => `/api/v1/data/${shopId}`, status: 200, dataMatches: { name: 'shop' } },
    { name: 'unknown database', method: 'GET', path: '/api/v1/data/nope', status: 404, code: 'data_not_found' },
    { name: 'resource of 128 chars', method: 'GET', path: `/api/v1/data/${'a'.repeat(128)}`, status: 404, code: 'data_not_found' },
    { name: 'resource of 129 chars', method: 'GET', path: `/api/v1/data/${'a'.repeat(129)}`, status: 400, code: 'data_invalid' },
  ];
  for (const c of cases) it(c.name, () => runCase(d, c));

  it('limits of a schema: 32 tables, 64 columns, 16 indexes (and one past each)', async () => {
    const tables = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`t${i}`, { columns: { a: { type: 'text' } } }]));
    const cols = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`c${i}`, { type: 'text', nullable: true }]));
    const idx = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `i${i}`, columns: [`c${i}`] }));
    expect((await d.api('POST', '/api/v1/data', { body: { name: 'l1', schema: { tables: tables(32) } } })).status).toBe(201);
    expect((await d.api('POST', '/api/v1/data', { body: { name: 'l2', schema: { tables: tables(33) } } })).status).toBe(400);
    expect((await d.api('POST', '/api/v1/data', { body: { name: 'l3', schema: { tables: { t: { columns: cols(64), indexes: idx(16) } } } } })).status).toBe(201);
    expect((await d.api('POST', '/api/v1/data', { body: { name: 'l4', schema: { tables: { t: { columns: cols(65) } } } } })).status).toBe(400);
    expect((await d.api('POST', '/api/v1/data', { body: { name: 'l5', schema: { tables: { t: { columns: cols(20), indexes: idx(17) } } } } })).status).toBe(400);
  });

  it("a table or column name refused by the identifier rule says the rule, at the name's path", async () => {
    const col = await d.api('POST', '/api/v1/data', { body: { name: 'rules', schema: { tables: { t: { columns: { 'Bad-Name': { type: 'text' } } } } } } });
    expect(col.status).toBe(400);
    expect(col.body.details).toEqual([{ path: 'body.schema.tables.t.columns.Bad-Name', message: 'invalid name: must match ^[a-z][a-z0-9_]{0,47}$' }]);
    const table = await d.api('POST', '/api/v1/data', { body: { name: 'rules', schema: { tables: { sqlite_t: { columns: { a: { type: 'text' } } } } } } });
    expect(table.body.details).toEqual([{ path: 'body.schema.tables.sqlite_t', message: 'invalid name: names starting with sqlite_ are reserved' }]);
  });

  it.skipIf(p.name !== 'sqlite')('keeps one private WAL file per database', async () => {
    const file = join(d.root, '.svc', 'data', `${shopId}.sqlite`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(d.root, '.svc', 'data')).mode & 0o777).toBe(0o700);
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  let alice = '';
  it('inserts, lists with filters, gets, updates, deletes', async () => {
    const ins = await tx([
      { op: 'insert', table: 'customers', values: { email: 'a@x.io', name: 'Alice', vip: true, meta: { tags: ['a'] } } },
      { op: 'insert', table: 'customers', rows: [{ email: 'b@x.io', name: 'Bob' }, { email: 'c@x.io' }] },
    ]);
    expect(ins.status, JSON.stringify(ins.body)).toBe(200);
    const [one, two] = ins.body.data;
    alice = one.rows[0]._id;
    expect(one.rows[0]).toMatchObject({ email: 'a@x.io', vip: true, meta: { tags: ['a'] }, _version: 1 });
    expect(Object.keys(one.rows[0]).slice(0, 4)).toEqual(['_id', '_version', '_created_at', '_updated_at']);
    expect(two.rows.map((r: any) => [r.email, r.vip, r.name])).toEqual([
      ['b@x.io', false, 'Bob'],
      ['c@x.io', false, null],
    ]);

    const list = await tx([
      { op: 'list', table: 'customers', filter: { vip: false }, orderBy: [{ column: 'email', direction: 'desc' }], limit: 1 },
      { op: 'list', table: 'customers', filter: { or: [{ email: { like: 'a%' } }, { name: { isNull: true } }] }, orderBy: [{ column: 'email' }] },
      { op: 'list', table: 'customers', filter: { email: { in: ['a@x.io', 'b@x.io'] }, name: { ne: 'Bob' } } },
      { op: 'list', table: 'customers', offset: 2, limit: 5 },
      { op: 'get', table: 'customers', id: alice },
    ]);
    expect(list.status).toBe(200);
    const [a, b, c, e, g] = list.body.data;
    expect(a).toMatchObject({ total: 2, nextOffset: 1 });
    expect(a.rows.map((r: any) => r.email)).toEqual(['c@x.io']);
    expect(b.rows.map((r: any) => r.email)).toEqual(['a@x.io', 'c@x.io']);
    expect(b.nextOffset).toBeNull();
    expect(c.rows.map((r: any) => r.email)).toEqual(['a@x.io']);
    expect(e).toMatchObject({ total: 3, nextOffset: null });
    expect(e.rows).toHaveLength(1);
    expect(g.rows[0].email).toBe('a@x.io');

    const up = await tx([{ op: 'update', table: 'customers', id: alice, expectedVersion: 1, values: { name: 'Alicia' } }]);
    expect(up.body.data[0].rows[0]).toMatchObject({ name: 'Alicia', _version: 2 });
    const stale = await tx([{ op: 'update', table: 'customers', id: alice, expectedVersion: 1, values: { name: 'X' } }]);
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe('data_conflict');
    expect(stale.body.details[0].path).toBe('body.operations.0.expectedVersion');

    const order = await tx([{ op: 'insert', table: 'orders', values: { customer: alice, total: 9.5, placed: '2026-01-02T03:04:05+01:00' } }]);
    expect(order.body.data[0].rows[0]).toMatchObject({ total: 9.5, qty: 1, placed: '2026-01-02T02:04:05.000Z' });
    const refused = await tx([{ op: 'delete', table: 'customers', id: alice }]);
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('data_constraint');
    expect(refused.body.error).toMatch(/orders\.customer/);
    const del = await tx([
      { op: 'delete', table: 'orders', id: order.body.data[0].rows[0]._id },
      { op: 'delete', table: 'customers', id: alice, expectedVersion: 2 },
    ]);
    expect(del.status).toBe(200);
    const gone = await tx([
      { op: 'get', table: 'customers', id: alice },
      { op: 'delete', table: 'customers', id: alice },
    ]);
    expect(gone.status).toBe(409);
    expect(gone.body.details[0].path).toBe('body.operations.1.id');
  });

  it('like ignores ASCII case on both providers; non-ASCII letters only on Postgres (ILIKE) — pinned in docs/data.md', async () => {
    await tx([{ op: 'insert', table: 'customers', rows: [{ email: 'Like@x.io' }, { email: 'élan@x.io' }] }]);
    const r = await tx([
      { op: 'list', table: 'customers', filter: { email: { like: 'like@%' } } },
      { op: 'list', table: 'customers', filter: { email: { like: 'ÉLAN@%' } } },
    ]);
    expect(r.body.data.map((x: any) => x.total)).toEqual([1, p.name === 'postgres' ? 1 : 0]);
    await sql({ sql: "DELETE FROM customers WHERE email IN ('Like@x.io', 'élan@x.io')", mode: 'write' });
  });

  it('a failing row of a many-row insert is named by its index, and none of the rows is kept', async () => {
    const r = await tx([{ op: 'insert', table: 'customers', rows: [{ email: 'many1@x.io' }, { email: 'many2@x.io', name: 'n' }, { email: 'many1@x.io' }] }]);
    expect(r.status).toBe(422);
    expect(r.body.details[0].path).toBe('body.operations.0.rows.2.email');
    expect((await sql({ sql: "SELECT count(*) AS n FROM customers WHERE email LIKE 'many%'" })).body.data.rows).toEqual([{ n: 0 }]);
  });

  it('upserts on a unique column', async () => {
    const first = await tx([{ op: 'upsert', table: 'customers', values: { email: 'u@x.io', name: 'U1' }, onConflict: ['email'] }]);
    const second = await tx([{ op: 'upsert', table: 'customers', values: { email: 'u@x.io', name: 'U2' }, onConflict: ['email'] }]);
    expect(second.body.data[0].rows[0]).toMatchObject({ _id: first.body.data[0].rows[0]._id, name: 'U2', _version: 2 });
    const notUnique = await tx([{ op: 'upsert', table: 'customers', values: { email: 'u@x.io', name: 'U2' }, onConflict: ['name'] }]);
    expect(notUnique.status).toBe(400);
    expect(notUnique.body.details[0].path).toBe('body.operations.0.onConflict');
  });

  it('a batch that fails at its last operation leaves nothing behind', async () => {
    const before = await sql({ sql: 'SELECT COUNT(*) AS n FROM customers' });
    const r = await tx([
      { op: 'insert', table: 'customers', values: { email: 'keep1@x.io' } },
      { op: 'insert', table: 'customers', values: { email: 'keep2@x.io' } },
      { op: 'update', table: 'customers', id: '00000000-0000-4000-8000-000000000000', values: { name: 'x' } },
      { op: 'insert', table: 'customers', values: { email: 'keep1@x.io' } },
    ]);
    expect(r.status).toBe(409);
    expect(r.body.error).toMatch(/operations\[2\]/);
    const dup = await tx([
      { op: 'insert', table: 'customers', values: { email: 'keep3@x.io' } },
      { op: 'insert', table: 'customers', values: { email: 'keep3@x.io' } },
    ]);
    expect(dup.status).toBe(422);
    expect(dup.body).toMatchObject({ code: 'data_constraint' });
    expect(dup.body.details[0].path).toBe('body.operations.1.values.email');
    const after = await sql({ sql: 'SELECT COUNT(*) AS n FROM customers' });
    expect(after.body.data.rows).toEqual(before.body.data.rows);
  });

  it('validates the whole batch before any write, naming index and field', async () => {
    const cases: [unknown[], number, string, string][] = [
      [
        [
          { op: 'insert', table: 'customers', values: { email: 'v@x.io' } },
          { op: 'insert', table: 'customers', values: { email: 5 } },
        ],
        400,
        'data_invalid',
        'body.operations.1.values.email',
      ],
      [[{ op: 'insert', table: 'customers', values: { email: 'v@x.io', _id: 'x' } }], 400, 'data_invalid', 'body.operations.0.values._id'],
      [[{ op: 'insert', table: 'customers', values: { name: 'no email' } }], 422, 'data_constraint', 'body.operations.0.values.email'],
      [[{ op: 'insert', table: 'nope', values: { a: 1 } }], 404, 'data_not_found', 'body.operations.0.table'],
      [[{ op: 'list', table: 'customers', filter: { nope: 1 } }], 400, 'data_invalid', 'body.operations.0.filter.nope'],
      [[{ op: 'list', table: 'customers', filter: { email: { regex: 'x' } } }], 400, 'data_invalid', 'body.operations.0.filter.email.regex'],
      [[{ op: 'list', table: 'customers', orderBy: [{ column: 'nope' }] }], 400, 'data_invalid', 'body.operations.0.orderBy.0.column'],
      [[{ op: 'insert', table: 'orders', values: { customer: '00000000-0000-4000-8000-000000000000', total: 1 } }], 422, 'data_constraint', 'body.operations.0.values.customer'],
      [[{ op: 'insert', table: 'orders', values: { customer: 'not-a-uuid', total: 1 } }], 400, 'data_invalid', 'body.operations.0.values.customer'],
      [[{ op: 'insert', table: 'orders', values: { customer: '00000000-0000-4000-8000-000000000000', total: 1, placed: 'yesterday' } }], 400, 'data_invalid', 'body.operations.0.values.placed'],
      [[{ op: 'insert', table: 'orders', values: { customer: '00000000-0000-4000-8000-000000000000', total: 1, qty: 1.5 } }], 400, 'data_invalid', 'body.operations.0.values.qty'],
    ];
    const before = await sql({ sql: 'SELECT COUNT(*) AS n FROM customers' });
    for (const [ops, status, code, path] of cases) {
      const r = await tx(ops);
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      expect(r.body.code).toBe(code);
      expect(r.body.details.map((x: any) => x.path)).toContain(path);
    }
    expect((await sql({ sql: 'SELECT COUNT(*) AS n FROM customers' })).body.data).toEqual(before.body.data);
  });

  it('limits of a batch: 100 operations, list limit 200 and offset 10000, in of 100', async () => {
    const get = { op: 'list', table: 'customers', limit: 1 };
    expect((await tx(Array(100).fill(get))).status).toBe(200);
    expect((await tx(Array(101).fill(get))).status).toBe(400);
    expect((await tx([])).status).toBe(400);
    expect((await tx([{ op: 'list', table: 'customers', limit: 200, offset: 10000 }])).status).toBe(200);
    expect((await tx([{ op: 'list', table: 'customers', limit: 201 }])).status).toBe(400);
    expect((await tx([{ op: 'list', table: 'customers', offset: 10001 }])).status).toBe(400);
    expect((await tx([{ op: 'list', table: 'customers', filter: { email: { in: Array(100).fill('a') } } }])).status).toBe(200);
    expect((await tx([{ op: 'list', table: 'customers', filter: { email: { in: Array(101).fill('a') } } }])).status).toBe(400);
    expect((await tx([get], { idempotencyKey: 'k'.repeat(200) })).status).toBe(200);
    expect((await tx([get], { idempotencyKey: 'k'.repeat(201) })).status).toBe(400);
    expect((await tx([get], { idempotencyKey: 'has space' })).status).toBe(400);
    expect((await tx([get], { extra: 1 })).status).toBe(400);
  });

  it('deletes with expectedVersion (pattern, mismatch) and removes the file (SQLite; Postgres: data-postgres.test.ts)', async () => {
    const made = await d.api('POST', '/api/v1/data', { body: { name: 'gone', schema: SHOP } });
    const file = join(d.root, '.svc', 'data', `${made.body.data.id}.sqlite`);
    await tx([{ op: 'list', table: 'customers' }], {}, 'gone');
    expect(existsSync(file)).toBe(p.name === 'sqlite');
    expect((await d.api('DELETE', '/api/v1/data/gone?expectedVersion=01')).status).toBe(400);
    expect((await d.api('DELETE', '/api/v1/data/gone?expectedVersion=0')).status).toBe(400);
    expect((await d.api('DELETE', '/api/v1/data/gone?expectedVersion=x')).status).toBe(400);
    const mismatch = await d.api('DELETE', '/api/v1/data/gone?expectedVersion=2');
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.code).toBe('data_conflict');
    await runCase(d, {
      name: 'delete',
      method: 'DELETE',
      path: '/api/v1/data/gone?expectedVersion=1',
      status: 200,
      data: { deleted: true },
      events: [{ name: 'data:deleted', data: { id: made.body.data.id, name: 'gone' } }],
    });
    expect(existsSync(file)).toBe(false);
    if (p.name === 'sqlite') expect(dataFiles(d).some((f) => f.startsWith(made.body.data.id))).toBe(false);
    expect((await d.api('GET', '/api/v1/data/gone')).status).toBe(404);
  });

  it('lists databases with a cursor', async () => {
    const page = await d.api('GET', '/api/v1/data?limit=2');
    expect(page.status).toBe(200);
    expect(page.body.data).toHaveLength(2);
    const next = page.headers.get('x-next-cursor');
    expect(next).toBeTruthy();
    const rest = await d.api('GET', `/api/v1/data?limit=200&cursor=${next}`);
    expect(rest.body.data.map((x: any) => x.name)).not.toContain(page.body.data[0].name);
  });
});

describe('orphan files', () => {
  it('a file no registry row names (a crash between file and row) is removed at start; others stay', async () => {
    const first = await startTestDaemon({ keepRoot: true });
    const made = await first.api('POST', '/api/v1/data', { body: { name: 'kept', schema: SHOP } });
    await first.close();
    const dir = join(first.root, '.svc', 'data');
    const stray = join(dir, '0190a6f0-0000-7000-8000-000000000000.sqlite');
    writeFileSync(stray, 'left by a crash');
    writeFileSync(`${stray}-wal`, '');
    const second = await startTestDaemon({ root: first.root });
    try {
      expect(existsSync(stray)).toBe(false);
      expect(existsSync(`${stray}-wal`)).toBe(false);
      expect(existsSync(join(dir, `${made.body.data.id}.sqlite`))).toBe(true);
      expect((await second.api('POST', '/api/v1/data/kept/query', { body: { sql: 'SELECT count(*) AS n FROM customers' } })).body.data.rows).toEqual([{ n: 0 }]);
    } finally {
      await second.close();
    }
  });
});
