import { afterAll, beforeAll, expect, it } from 'vitest';
import { SHOP } from './data-fixtures.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { describeProviders, onProvider } from './data-providers.js';
import { runCase } from './scenarios.js';

// Structured migrations over HTTP: applied atomically, schemaVersion + 1, replay by id and checksum.

describeProviders('database migrations', (p) => {
  let d: TestDaemon;
  let id = '';
  beforeAll(async () => {
    d = await startTestDaemon({ config: onProvider(p) });
    const r = await d.api('POST', '/api/v1/data', { body: { name: 'shop', schema: SHOP } });
    id = r.body.data.id;
    await d.api('POST', '/api/v1/data/shop/transactions', {
      body: {
        operations: [
          {
            op: 'insert',
            table: 'customers',
            rows: [
              { email: 'a@x.io', name: 'A' },
              { email: 'b@x.io', name: 'A' },
            ],
          },
        ],
      },
    });
  });
  afterAll(async () => {
    await d.close();
  });

  const migrate = (body: Record<string, unknown>) => d.api('POST', '/api/v1/data/shop/migrations', { body });
  const version = async () => (await d.api('GET', '/api/v1/data/shop')).body.data.schemaVersion as number;

  const first = {
    id: '2026-01-add-phone',
    expectedVersion: 1,
    steps: [
      { op: 'addColumn', table: 'customers', column: 'phone', definition: { type: 'text', nullable: true } },
      { op: 'addIndex', table: 'customers', index: { columns: ['phone'] } },
      { op: 'renameColumn', table: 'customers', from: 'name', to: 'full_name' },
      { op: 'addTable', table: 'notes', definition: { columns: { body: { type: 'text' }, customer: { type: 'uuid', references: { table: 'customers', column: '_id' } } } } },
    ],
  };

  it('applies steps atomically and bumps schemaVersion, with data:migrated', async () => {
    const db = await runCase(d, {
      name: 'migrate',
      method: 'POST',
      path: '/api/v1/data/shop/migrations',
      body: first,
      status: 201,
      dataMatches: { name: 'shop', schemaVersion: 2 },
      events: () => [{ name: 'data:migrated', data: { id, name: 'shop', migrationId: first.id, schemaVersion: 2 } }],
    });
    expect(Object.keys(db.schema.tables.customers.columns)).toEqual(['email', 'full_name', 'vip', 'meta', 'phone']);
    expect(db.schema.tables.customers.indexes).toEqual([{ name: 'customers_phone_idx', columns: ['phone'] }]);
    const rows = await d.api('POST', '/api/v1/data/shop/query', { body: { sql: 'SELECT email, full_name, phone FROM customers ORDER BY email' } });
    expect(rows.body.data.rows).toEqual([
      { email: 'a@x.io', full_name: 'A', phone: null },
      { email: 'b@x.io', full_name: 'A', phone: null },
    ]);
    const note = await d.api('POST', '/api/v1/data/shop/transactions', {
      body: { operations: [{ op: 'insert', table: 'notes', values: { body: 'hi', customer: '00000000-0000-4000-8000-000000000000' } }] },
    });
    expect(note.status).toBe(422);
    expect(note.body.details[0].path).toBe('body.operations.0.values.customer');
  });

  it('replays the same id and content, refuses the same id with other content', async () => {
    const before = await d.daemon.app.events.lastId();
    const again = await migrate(first);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.schemaVersion).toBe(2);
    expect(await d.daemon.app.events.lastId()).toBe(before);
    const other = await migrate({ ...first, steps: first.steps.slice(0, 1) });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('data_conflict');
    expect(await version()).toBe(2);
  });

  it('refuses a stale expectedVersion with 409', async () => {
    const r = await migrate({ id: 'stale', expectedVersion: 1, steps: [{ op: 'addColumn', table: 'customers', column: 'x', definition: { type: 'text', nullable: true } }] });
    expect(r.status).toBe(409);
    expect(r.body.details[0].path).toBe('body.expectedVersion');
  });

  it('needs allowDestructive for dropColumn, dropTable and dropIndex', async () => {
    for (const step of [
      { op: 'dropColumn', table: 'customers', column: 'phone' },
      { op: 'dropTable', table: 'notes' },
      { op: 'dropIndex', table: 'customers', name: 'customers_phone_idx' },
    ]) {
      const r = await migrate({ id: `drop-${step.op}`, expectedVersion: 2, steps: [step] });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: 'data_invalid' });
      expect(r.body.details[0].path).toBe('body.steps.0.op');
    }
    expect(await version()).toBe(2);
    const ok = await migrate({
      id: 'drops',
      expectedVersion: 2,
      allowDestructive: true,
      steps: [
        { op: 'dropIndex', table: 'customers', name: 'customers_phone_idx' },
        { op: 'dropColumn', table: 'customers', column: 'phone' },
        { op: 'dropTable', table: 'notes' },
      ],
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(ok.body.data.schemaVersion).toBe(3);
    expect(ok.body.data.schema.tables.notes).toBeUndefined();
    expect(ok.body.data.schema.tables.customers.indexes).toBeUndefined();
  });

  it('a migration failing at its last step leaves the schema and the file as they were', async () => {
    // Two rows share full_name 'A': the unique index of the last step cannot be built.
    const r = await migrate({
      id: 'breaks',
      expectedVersion: 3,
      steps: [
        { op: 'addTable', table: 'tags', definition: { columns: { label: { type: 'text' } } } },
        { op: 'addIndex', table: 'customers', index: { columns: ['full_name'], unique: true } },
      ],
    });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ code: 'data_constraint' });
    expect(r.body.error).toMatch(/full_name/);
    expect(r.body.error).not.toMatch(/SQLITE_|\.svc/);
    expect(await version()).toBe(3);
    const t = await d.api('POST', '/api/v1/data/shop/query', { body: { sql: 'SELECT * FROM tags' } });
    expect(t.status).toBe(404);
    const list = await d.api('GET', '/api/v1/data/shop/migrations');
    expect(list.body.data.map((m: any) => [m.id, m.schemaVersion])).toEqual([
      [first.id, 2],
      ['drops', 3],
    ]);
    expect(list.body.data[0]).toMatchObject({ checksum: expect.stringMatching(/^[0-9a-f]{64}$/), appliedAt: expect.any(String) });
  });

  it('refuses invalid steps naming the step', async () => {
    const cases: [unknown, string][] = [
      [{ op: 'addColumn', table: 'nope', column: 'x', definition: { type: 'text', nullable: true } }, 'body.steps.0.table'],
      [{ op: 'addColumn', table: 'customers', column: 'email', definition: { type: 'text', nullable: true } }, 'body.steps.0.column'],
      [{ op: 'addColumn', table: 'customers', column: 'req', definition: { type: 'text' } }, 'body.steps.0.definition.nullable'],
      [{ op: 'renameColumn', table: 'customers', from: 'nope', to: 'x' }, 'body.steps.0.from'],
      [{ op: 'addIndex', table: 'customers', index: { columns: ['nope'] } }, 'body.steps'],
      [{ op: 'explode', table: 'customers' }, 'body.steps.0.op'],
    ];
    for (const [step, path] of cases) {
      const r = await migrate({ id: 'bad', expectedVersion: 3, steps: [step] });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.details.map((x: any) => x.path).join(' ')).toContain(path);
    }
    expect(await version()).toBe(3);
  });

  it('deletes with the current expectedVersion', async () => {
    expect((await d.api('DELETE', '/api/v1/data/shop?expectedVersion=1')).status).toBe(409);
    expect((await d.api('DELETE', '/api/v1/data/shop?expectedVersion=3')).status).toBe(200);
  });
});
