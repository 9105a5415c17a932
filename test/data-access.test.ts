import Database from '../src/db/sqlite.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IDEMPOTENCY_DDL, IDEMPOTENCY_TTL_MS, remember, replayOf } from '../src/resources/data/idempotency.js';
import { SHOP } from './data-fixtures.js';
import { FakeClock } from './fake-clock.js';
import { eventually, startTestDaemon, type TestDaemon } from './harness.js';
import { describeProviders, onProvider } from './data-providers.js';

// Grants (DESIGN section 4) and idempotency keys on the application-database endpoints.

const KEYS = {
  reader: 'reader-key-0123456789abcdef',
  writer: 'writer-key-0123456789abcdef',
  orders: 'orders-key-0123456789abcdef',
  creator: 'creator-key-0123456789abcdef',
  manager: 'manager-key-0123456789abcdef',
  nothing: 'nothing-key-0123456789abcdef',
  other: 'other-key-0123456789abcdef',
};

const config = (readerActions: string[] = ['read']) => ({
  apiKeys: [
    { name: 'reader', key: KEYS.reader, grants: [{ resource: 'shop', actions: readerActions }] },
    { name: 'writer', key: KEYS.writer, grants: [{ resource: 'shop', actions: ['write'] }] },
    { name: 'orders', key: KEYS.orders, grants: [{ resource: 'shop', tables: ['orders'], actions: ['write'] }] },
    { name: 'creator', key: KEYS.creator, grants: [{ resource: '*', actions: ['manage'] }] },
    { name: 'manager', key: KEYS.manager, grants: [{ resource: 'shop', actions: ['manage'] }] },
    { name: 'nothing', key: KEYS.nothing, grants: [] },
    { name: 'other', key: KEYS.other },
  ],
});

describeProviders('grants on application databases', (p) => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon({ config: onProvider(p, config()) });
    expect((await d.api('POST', '/api/v1/data', { body: { name: 'shop', schema: SHOP } })).status).toBe(201);
    expect((await d.api('POST', '/api/v1/data', { body: { name: 'hidden', schema: SHOP } })).status).toBe(201);
  });
  afterAll(async () => {
    await d.close();
  });

  const as = (key: string | null, method: string, path: string, body?: unknown) => d.api(method, path, { key, body });
  const tx = (key: string, ops: unknown[]) => as(key, 'POST', '/api/v1/data/shop/transactions', { operations: ops });
  const sql = (key: string, s: string, mode = 'read') => as(key, 'POST', '/api/v1/data/shop/query', { sql: s, mode });
  let n = 0;
  const insertCustomer = () => ({ op: 'insert', table: 'customers', values: { email: `c${++n}@x.io` } });

  it('401 without a valid key, 403 data_forbidden without the grant', async () => {
    expect((await as(null, 'GET', '/api/v1/data/shop')).status).toBe(401);
    expect((await as('wrong-key-0123456789abcdef', 'GET', '/api/v1/data/shop')).status).toBe(401);
    expect((await as(null, 'POST', '/api/v1/data/shop/query', { sql: 'SELECT 1' })).status).toBe(401);
    const none = await as(KEYS.nothing, 'GET', '/api/v1/data/shop');
    expect(none.status).toBe(403);
    expect(none.body.code).toBe('data_forbidden');
    expect((await as(KEYS.nothing, 'GET', '/api/v1/data')).body.data).toEqual([]);
    expect((await as(KEYS.reader, 'GET', '/api/v1/data/hidden')).status).toBe(403);
    // A key with grants reaches only the database routes.
    expect((await as(KEYS.creator, 'GET', '/api/v1/tasks')).status).toBe(403);
  });

  it('read < write < manage', async () => {
    expect((await as(KEYS.reader, 'GET', '/api/v1/data')).body.data.map((x: any) => x.name)).toEqual(['shop']);
    expect((await sql(KEYS.reader, 'SELECT count(*) AS n FROM customers')).status).toBe(200);
    expect((await tx(KEYS.reader, [{ op: 'list', table: 'customers' }])).status).toBe(200);
    const w = await tx(KEYS.reader, [{ op: 'list', table: 'customers' }, insertCustomer()]);
    expect(w.status).toBe(403);
    expect(w.body.details[0].path).toBe('body.operations.1.table');
    expect((await sql(KEYS.reader, "INSERT INTO customers (email) VALUES ('r@x.io')", 'write')).status).toBe(403);

    expect((await tx(KEYS.writer, [insertCustomer()])).status).toBe(200);
    expect((await sql(KEYS.writer, "INSERT INTO customers (email) VALUES ('w@x.io')", 'write')).status).toBe(200);
    const migration = { id: 'm1', expectedVersion: 1, steps: [{ op: 'addColumn', table: 'customers', column: 'x', definition: { type: 'text', nullable: true } }] };
    expect((await as(KEYS.writer, 'POST', '/api/v1/data/shop/migrations', migration)).status).toBe(403);
    expect((await as(KEYS.writer, 'DELETE', '/api/v1/data/shop')).status).toBe(403);
    expect((await as(KEYS.manager, 'POST', '/api/v1/data/shop/migrations', migration)).status).toBe(201);
    expect((await as(KEYS.manager, 'GET', '/api/v1/data/shop/migrations')).status).toBe(200);
  });

  it('creating a database needs manage on "*"', async () => {
    const body = (name: string) => ({ name, schema: SHOP });
    for (const k of [KEYS.reader, KEYS.writer, KEYS.manager, KEYS.orders]) {
      const r = await as(k, 'POST', '/api/v1/data', body('nope'));
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('data_forbidden');
    }
    expect((await as(KEYS.creator, 'POST', '/api/v1/data', body('made'))).status).toBe(201);
    expect((await as(KEYS.creator, 'DELETE', '/api/v1/data/made')).status).toBe(200);
  });

  it('a table grant limits record operations and raw SQL alike', async () => {
    const shown = await as(KEYS.orders, 'GET', '/api/v1/data/shop');
    expect(Object.keys(shown.body.data.schema.tables)).toEqual(['orders']);
    expect((await sql(KEYS.orders, 'SELECT count(*) AS n FROM orders')).status).toBe(200);
    expect((await tx(KEYS.orders, [{ op: 'list', table: 'orders' }])).status).toBe(200);
    const list = await tx(KEYS.orders, [{ op: 'list', table: 'customers' }]);
    expect(list.status).toBe(403);
    for (const s of [
      'SELECT * FROM customers',
      'SELECT o.total FROM orders o JOIN customers c ON c._id = o.customer',
      'SELECT (SELECT email FROM customers LIMIT 1) AS e FROM orders',
      'WITH c AS (SELECT * FROM customers) SELECT count(*) FROM c',
      'SELECT total FROM orders WHERE customer IN (SELECT _id FROM customers)',
    ]) {
      const r = await sql(KEYS.orders, s);
      expect(r.status, s).toBe(403);
      expect(r.body.code).toBe('data_forbidden');
    }
    const write = await sql(KEYS.orders, "UPDATE customers SET name = 'x'", 'write');
    expect(write.status).toBe(403);
  });

  it('a grant edited in project.json applies to the next request', async () => {
    expect((await tx(KEYS.reader, [insertCustomer()])).status).toBe(403);
    d.writeConfig({ name: 'test-project', ...onProvider(p, config(['write'])) });
    await eventually(async () => (await tx(KEYS.reader, [insertCustomer()])).status === 200, 5000);
    d.writeConfig({ name: 'test-project', ...onProvider(p), apiKeys: config().apiKeys.filter((k) => k.name !== 'reader') });
    await eventually(async () => (await as(KEYS.reader, 'GET', '/api/v1/data/shop')).status === 401, 5000);
  });
});

describeProviders('idempotency keys', (p) => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon({ config: onProvider(p, config()) });
    expect((await d.api('POST', '/api/v1/data', { body: { name: 'shop', schema: SHOP } })).status).toBe(201);
  });
  afterAll(async () => {
    await d.close();
  });

  const count = async () => (await d.api('POST', '/api/v1/data/shop/query', { body: { sql: 'SELECT count(*) AS n FROM customers' } })).body.data.rows[0].n as number;

  it('replays a batch with Idempotent-Replayed and runs nothing; another body is 409', async () => {
    const body = { operations: [{ op: 'insert', table: 'customers', values: { email: 'i@x.io' } }], idempotencyKey: 'batch-1' };
    const first = await d.api('POST', '/api/v1/data/shop/transactions', { body });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await d.api('POST', '/api/v1/data/shop/transactions', { body });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(await count()).toBe(1);
    const other = await d.api('POST', '/api/v1/data/shop/transactions', { body: { ...body, operations: [{ op: 'insert', table: 'customers', values: { email: 'j@x.io' } }] } });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('data_conflict');
    expect(await count()).toBe(1);
    // The same key on the other endpoint is another request.
    const q = await d.api('POST', '/api/v1/data/shop/query', { body: { sql: 'SELECT 1', idempotencyKey: 'batch-1' } });
    expect(q.status).toBe(409);
  });

  it('replays a write query; keys are scoped to the key owner', async () => {
    const body = { sql: "INSERT INTO customers (email) VALUES ('q@x.io') RETURNING email", mode: 'write', idempotencyKey: 'q-1' };
    const first = await d.api('POST', '/api/v1/data/shop/query', { body });
    expect(first.body.data).toEqual({ rows: [{ email: 'q@x.io' }], rowCount: 1, truncated: false });
    const again = await d.api('POST', '/api/v1/data/shop/query', { body });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(await count()).toBe(2);
    // Another caller's identical key is its own: it runs (and here fails on the unique email).
    const otherOwner = await d.api('POST', '/api/v1/data/shop/query', { body, key: KEYS.other });
    expect(otherOwner.status).toBe(422);
    expect(otherOwner.headers.get('idempotent-replayed')).toBeNull();
  });

  it('a failed request stores nothing: its retry runs again', async () => {
    const bad = { operations: [{ op: 'insert', table: 'customers', values: { email: 'i@x.io' } }], idempotencyKey: 'fails' };
    expect((await d.api('POST', '/api/v1/data/shop/transactions', { body: bad })).status).toBe(422);
    await d.api('POST', '/api/v1/data/shop/query', { body: { sql: "DELETE FROM customers WHERE email = 'i@x.io'", mode: 'write' } });
    const retry = await d.api('POST', '/api/v1/data/shop/transactions', { body: bad });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it.skipIf(p.name !== 'sqlite')('keeps answers 24 h (fake clock; the Postgres functions take the same cut-off: data-postgres.test.ts)', () => {
    const db = new Database(':memory:');
    db.exec(IDEMPOTENCY_DDL);
    const ref = { owner: 'o', key: 'k', hash: 'h' };
    const t0 = 1_700_000_000_000;
    remember(db, ref, { a: 1 }, t0);
    expect(replayOf(db, ref, t0 + IDEMPOTENCY_TTL_MS - 1)).toEqual({ a: 1 });
    expect(() => replayOf(db, { ...ref, hash: 'other' }, t0 + 1)).toThrow(/different request/);
    expect(replayOf(db, ref, t0 + IDEMPOTENCY_TTL_MS + 1)).toBeUndefined();
    expect(db.prepare('SELECT count(*) AS n FROM _svc_idempotency').get()).toEqual({ n: 0 });
  });
});

describeProviders("application databases on the daemon's clock", (p) => {
  const clock = new FakeClock();
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon({ clock, config: onProvider(p) });
  });
  afterAll(async () => {
    await d?.close();
  });
  const now = () => new Date(clock.now()).toISOString();
  const insert = (email: string, idempotencyKey?: string) =>
    d.api('POST', '/api/v1/data/clocked/transactions', { body: { operations: [{ op: 'insert', table: 'customers', values: { email } }], idempotencyKey } });

  it('stamps the database, its migrations and (where svc stamps them) its rows with the fake time', async () => {
    const made = await d.api('POST', '/api/v1/data', { body: { name: 'clocked', schema: SHOP } });
    expect(made.body.data.createdAt).toBe(now());
    clock.advance(60_000);
    const ins = await insert('c@x.io');
    expect(ins.status).toBe(200);
    // PostgreSQL stamps rows with its server's own clock (the provider's serverStamps).
    if (p.name === 'sqlite') expect(ins.body.data[0].rows[0]).toMatchObject({ _created_at: now(), _updated_at: now() });
    clock.advance(60_000);
    const step = { op: 'addColumn', table: 'customers', column: 'phone', definition: { type: 'text', nullable: true } };
    expect((await d.api('POST', '/api/v1/data/clocked/migrations', { body: { id: 'm1', expectedVersion: 1, steps: [step] } })).status).toBe(201);
    expect((await d.api('GET', '/api/v1/data/clocked/migrations')).body.data.map((m: { appliedAt: string }) => m.appliedAt)).toEqual([now()]);
  });

  it('keeps an idempotency key for 24 h of the fake time, then forgets it', async () => {
    expect((await insert('k1@x.io', 'once')).status).toBe(200);
    clock.advance(IDEMPOTENCY_TTL_MS - 1);
    expect((await insert('k2@x.io', 'once')).status).toBe(409);
    clock.advance(2);
    const later = await insert('k2@x.io', 'once');
    expect(later.status).toBe(200);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
  });
});
