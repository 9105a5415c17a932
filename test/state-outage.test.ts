import { randomBytes } from 'node:crypto';
import { afterAll, expect, inject, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { startTestPostgres, type TestPostgres } from './pg-server.js';

// A state server that goes away is an outage, not a crash: requests answer 503 unavailable with
// Retry-After while it is down, and the daemon carries on by itself once it is back.

const noPg = inject('pgUrl') === '';
let pg: TestPostgres | undefined;
let d: TestDaemon | undefined;
afterAll(async () => {
  await d?.close().catch(() => undefined);
  pg?.stop();
});

it.skipIf(noPg)('PostgreSQL stopped under the daemon: 503 unavailable, then served again once it is back', async () => {
  // A server of its own: this test stops it.
  const started = await startTestPostgres();
  if ('skip' in started) throw new Error(started.skip);
  pg = started;
  d = await startTestDaemon({ env: { SVC_STATE_URL: pg.url, SVC_VAULT_KEY: randomBytes(32).toString('base64') } });
  expect((await d.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
  pg.halt();
  const down = await d.api('GET', '/api/v1/agents/ana');
  expect(down.status).toBe(503);
  expect(down.body).toMatchObject({ ok: false, code: 'unavailable' });
  expect(down.headers.get('retry-after')).toBe('1');
  expect((await d.api('GET', '/healthz', { key: null })).status).toBe(200);
  pg.start();
  expect((await d.api('GET', '/api/v1/agents/ana')).status).toBe(200);
  expect((await d.api('POST', '/api/v1/agents', { body: { name: 'bob' } })).status).toBe(201);
});
