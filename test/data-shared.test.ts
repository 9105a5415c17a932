import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { freshStateDatabase } from './state-pg.js';

// Application databases on PostgreSQL behind two daemons that share one state: a database opened
// by one daemon must not lock the other out. Each open used to set new role passwords; on a shared
// state the first opener's are kept (sealed in the state) and every daemon logs in with them.

const pgUrl = inject('pgUrl');
if (!pgUrl) console.warn(`data-shared: skipped, ${inject('pgSkip')}`);

describe.skipIf(!pgUrl)('application databases through two daemons on one PostgreSQL state', () => {
  let a: TestDaemon;
  let b: TestDaemon;
  beforeAll(async () => {
    const env = { SVC_STATE_URL: await freshStateDatabase(), SVC_VAULT_KEY: randomBytes(32).toString('base64') };
    // Idle connections close after a second, so each step below logs in again.
    const config = { data: { provider: 'postgres', url: pgUrl, pool: { idleMs: 1_000 } } };
    a = await startTestDaemon({ env, config });
    b = await startTestDaemon({ env, config });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  const rows = async (d: TestDaemon) => {
    const r = await d.api('POST', '/api/v1/data/notes/query', { body: { sql: 'SELECT body FROM notes ORDER BY body' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return (r.body.data.rows as { body: string }[]).map((x) => x.body);
  };
  const insert = async (d: TestDaemon, body: string) => {
    const r = await d.api('POST', '/api/v1/data/notes/transactions', { body: { operations: [{ op: 'insert', table: 'notes', values: { body } }] } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };

  it('made through one, used through both, again and again after their connections closed', async () => {
    expect((await a.api('POST', '/api/v1/data', { body: { name: 'notes', schema: { tables: { notes: { columns: { body: { type: 'text' } } } } } } })).status).toBe(201);
    await insert(a, 'from a');
    expect(await rows(b)).toEqual(['from a']);
    await insert(b, 'from b');
    const all = ['from a', 'from b'];
    for (let round = 0; round < 2; round++) {
      await new Promise((r) => setTimeout(r, 1_300));
      expect(await rows(a)).toEqual([...all].sort());
      expect(await rows(b)).toEqual([...all].sort());
      await insert(round % 2 ? b : a, `again ${round}`);
      all.push(`again ${round}`);
    }
  });
});

describe.skipIf(!pgUrl)("application databases' roles changed at once, through one daemon or two", () => {
  let a: TestDaemon;
  let b: TestDaemon;
  beforeAll(async () => {
    const env = { SVC_STATE_URL: await freshStateDatabase(), SVC_VAULT_KEY: randomBytes(32).toString('base64') };
    const config = { data: { provider: 'postgres', url: pgUrl } };
    a = await startTestDaemon({ env, config });
    b = await startTestDaemon({ env, config });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  const schema = { tables: { t: { columns: { v: { type: 'text' } } } } };

  it('creates, opens and deletes at once answer 2xx (never 500: "tuple concurrently updated")', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `race${i}`);
    // Each create grants CONNECT on the one server database: the same catalog row, at once.
    const made = await Promise.all(names.map((name, i) => (i % 2 ? b : a).api('POST', '/api/v1/data', { body: { name, schema } })));
    expect(
      made.map((r) => r.status),
      JSON.stringify(made.map((r) => r.body)),
    ).toEqual(names.map(() => 201));
    // Each daemon's first use of a database sets its roles' passwords: the same roles, from two daemons at once.
    const reads = await Promise.all(names.flatMap((name) => [a, b].map((d) => d.api('POST', `/api/v1/data/${name}/query`, { body: { sql: 'SELECT count(*) AS n FROM t' } }))));
    expect(
      reads.map((r) => r.status),
      JSON.stringify(reads.filter((r) => r.status !== 200).map((r) => r.body)),
    ).toEqual(reads.map(() => 200));
    const gone = await Promise.all(
      names.map((name, i) => Promise.all([(i % 2 ? a : b).api('DELETE', `/api/v1/data/${name}`), (i % 2 ? b : a).api('POST', `/api/v1/data/${name}/query`, { body: { sql: 'SELECT 1' } })])),
    );
    for (const [del, read] of gone) {
      expect(del.status, JSON.stringify(del.body)).toBe(200);
      // A read racing the delete finds the database, or finds it gone: never a 500.
      expect([200, 404, 503], JSON.stringify(read.body)).toContain(read.status);
    }
  });
});
