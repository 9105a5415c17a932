import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { request } from 'undici';
import { afterAll, expect, inject, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { freshStateDatabase } from './state-pg.js';

// Issue 33, item 1: with the state on PostgreSQL, a request that waits on the server (here on a
// row lock another session holds for 4 s: the 2 s, with room for up to eight tries of each
// check) holds up only itself. Meanwhile the same daemon answers /healthz, a task read and an SSE
// heartbeat, each within 20 ms: the daemon's event loop never waits for PostgreSQL.

const noPg = inject('pgUrl') === '';
const HOLD_MS = 4_000;
const BOUND_MS = 20;
const HEARTBEAT_MS = 100;

let d: TestDaemon | undefined;
let holder: pg.Client | undefined;
afterAll(async () => {
  await holder?.end().catch(() => undefined);
  await d?.close();
});

/** How long `fn` takes, in ms; the best of up to eight tries (a busy shared machine, or the suite's other files, can stall any one request). */
async function timed(fn: () => Promise<void>): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < 8 && best > BOUND_MS; i++) {
    const t = performance.now();
    await fn();
    best = Math.min(best, performance.now() - t);
  }
  return best;
}

it.skipIf(noPg)('a request waiting 4 s on a row lock: meanwhile /healthz, a task read and an SSE heartbeat answer within 20 ms', async () => {
  const url = await freshStateDatabase();
  d = await startTestDaemon({ env: { SVC_STATE_URL: url, SVC_VAULT_KEY: randomBytes(32).toString('base64') }, sse: { heartbeatMs: HEARTBEAT_MS } });
  const daemon = d;
  const auth = { authorization: `Bearer ${daemon.key}` };
  const locked = (await daemon.api('POST', '/api/v1/tasks', { body: { title: 'held' } })).body.data.id as string;
  const other = (await daemon.api('POST', '/api/v1/tasks', { body: { title: 'free' } })).body.data.id as string;

  // An SSE stream, its heartbeats' arrival times recorded.
  const stream = await request(`${daemon.url}/v1/events`, { headers: auth });
  expect(stream.statusCode).toBe(200);
  const pings: number[] = [];
  stream.body.on('data', (chunk: Buffer) => {
    if (chunk.toString().includes(': ping')) pings.push(performance.now());
  });
  while (pings.length < 2) await new Promise((r) => setTimeout(r, HEARTBEAT_MS));

  // Another session holds the task's row lock for 4 s.
  holder = new pg.Client(url);
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT id FROM tasks WHERE id = $1 FOR UPDATE', [locked]);
  const heldAt = performance.now();
  const release = new Promise<void>((resolve, reject) => {
    setTimeout(() => holder!.query('COMMIT').then(() => resolve(), reject), HOLD_MS);
  });

  // The write waits for the lock...
  const waiting = daemon.api('PATCH', `/api/v1/tasks/${locked}`, { body: { title: 'changed' } }).then((r) => ({ r, at: performance.now() }));
  await new Promise((r) => setTimeout(r, 200));
  const pingsBefore = pings.length;

  // ...while the daemon answers the others at once.
  const health = await timed(async () => void expect((await daemon.api('GET', '/healthz', { key: null })).status).toBe(200));
  const read = await timed(async () => void expect((await daemon.api('GET', `/api/v1/tasks/${other}`)).body.data.title).toBe('free'));
  const heldRead = await timed(async () => void expect((await daemon.api('GET', `/api/v1/tasks/${locked}`)).body.data.title).toBe('held'));
  // Every answer above came while the lock was still held.
  const answeredBy = performance.now();
  await new Promise((r) => setTimeout(r, 5 * HEARTBEAT_MS));
  const during = pings.slice(pingsBefore - 1).filter((t) => t < heldAt + HOLD_MS);
  const gaps = during.slice(1).map((t, i) => t - during[i]!);

  const { r, at } = await waiting;
  await release;
  expect(r.status).toBe(200);
  // It did wait for the lock: the check below is about a daemon busy with a blocked request.
  expect(at - heldAt).toBeGreaterThanOrEqual(HOLD_MS - 50);
  expect(answeredBy - heldAt).toBeLessThan(HOLD_MS);
  expect(health).toBeLessThanOrEqual(BOUND_MS);
  expect(read).toBeLessThanOrEqual(BOUND_MS);
  expect(heldRead).toBeLessThanOrEqual(BOUND_MS);
  // Heartbeats kept coming at their interval while the write waited (a blocked loop would show a gap as long as the hold).
  // One ping read late is this test process's own turn on a busy machine (seen once at 121 ms in
  // CI, with the suite's other files running): all but one gap within the bound, none near a hold.
  expect(gaps.length).toBeGreaterThanOrEqual(4);
  expect(gaps.filter((g) => g > HEARTBEAT_MS + BOUND_MS).length, JSON.stringify(gaps)).toBeLessThanOrEqual(1);
  expect(Math.max(...gaps), JSON.stringify(gaps)).toBeLessThanOrEqual(HEARTBEAT_MS + 5 * BOUND_MS);
  expect((await daemon.api('GET', `/api/v1/tasks/${locked}`)).body.data.title).toBe('changed');
  stream.body.destroy();
});
