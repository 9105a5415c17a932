import { afterEach, expect, it } from 'vitest';
import { isPostgres } from '../src/db/open.js';
import { PRUNER } from '../src/db/prune.js';
import { FakeClock } from './fake-clock.js';
import { statePg } from './state-pg.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

// Retention of events and webhook deliveries, by age (on a fake clock) and by count (small limits),
// against the real daemon and its state database. Deliveries are settled without any network: a
// webhook disabled with PATCH fails what it had waiting. Pending deliveries are made due far in the
// future in their event's own transaction, so the worker never takes them.

const DAY = 86_400_000;
let d: TestDaemon | undefined;
afterEach(async () => {
  await d?.close();
  d = undefined;
});

async function start(config: Record<string, unknown>, clock = new FakeClock(Date.parse('2030-01-01T00:00:00.000Z'))) {
  // The daemon's own passes (every 10 s) would run between this file's: a test on a loaded
  // machine outlasts 10 s, and a pass under way when the test asks for one does the work itself.
  d = await startTestDaemon({ clock, config, pruneEveryMs: 3_600_000 });
  const app = d.daemon.app;
  const hook = async (events: string[]) => (await d!.api('POST', '/v1/webhooks', { body: { url: 'http://127.0.0.1:9/', events } })).body.data as { id: string };
  const count = async (sql: string, ...args: unknown[]) => ((await app.db.prepare(sql).get(...args)) as { n: number }).n;
  /** n events; the deliveries they make wait an hour past `clock`, so none is sent. */
  const emit = async (n: number, prefix: string, name: 'team:created' | 'agent:created' = 'team:created') =>
    await app.events.write(async () => {
      for (let i = 0; i < n; i++) app.events.emit(name, { name: `${prefix}${i}` });
      await app.db.prepare("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE status = 'pending'").run(clock.now() + 365 * DAY);
    });
  const pass = () => app.services.get(PRUNER).pass();
  // The pass the daemon starts with is over before the test makes anything.
  await pass();
  return { app, clock, hook, count, emit, pass };
}

it('by age: events after events.retentionHours, settled deliveries after webhooks.retentionDays; pending ones stay', async () => {
  const { app, clock, hook, count, emit, pass } = await start({ events: { retentionHours: 24 }, webhooks: { retentionDays: 30 } });
  const settled = await hook(['team:created']);
  const waiting = await hook(['team:created']);
  await emit(5, 'old');
  // Settled: the webhook is disabled, which fails what it had waiting.
  expect((await d!.api('PATCH', `/v1/webhooks/${settled.id}`, { body: { enabled: false } })).status).toBe(200);
  await app.db
    .prepare("INSERT INTO webhook_attempts (delivery_id, n, at, status_code, error, duration_ms) SELECT id, 1, created_at, 503, 'HTTP 503', 1 FROM webhook_deliveries WHERE webhook_id = ?")
    .run(settled.id);
  const oldLast = await app.events.lastId();

  await clock.pass(23 * 3_600_000);
  await emit(2, 'new');
  expect(await pass()).toEqual({ events: 0, 'webhook deliveries': 0, 'routine work': 0 });

  await clock.pass(2 * 3_600_000);
  // The five, and on a shared state the runner's runner:online written at start.
  expect(await pass()).toEqual({ events: statePg() ? 6 : 5, 'webhook deliveries': 0, 'routine work': 0 });
  expect(await app.events.oldestId()).toBe(oldLast + 1);

  // 29 days and an hour after the first deliveries were made: kept; at 30 days and an hour: gone.
  await clock.pass(28 * DAY);
  expect(await pass()).toEqual({ events: 2, 'webhook deliveries': 0, 'routine work': 0 });
  await clock.pass(DAY);
  expect(await pass()).toEqual({ events: 0, 'webhook deliveries': 5, 'routine work': 0 });
  expect(await count('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ?', settled.id)).toBe(0);
  expect(await count('SELECT COUNT(*) AS n FROM webhook_attempts')).toBe(0);
  // Thirty-one days old and still pending: kept, whatever its age.
  expect(await count("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending'", waiting.id)).toBe(7);
  const listed = (await d!.api('GET', `/v1/webhooks/${waiting.id}/deliveries?limit=200`)).body.data as { status: string }[];
  expect(listed.map((x) => x.status)).toEqual(Array(7).fill('pending'));
});

it('by count: the newest events.maxEvents events and webhooks.maxDeliveries deliveries are kept, and every pending one', async () => {
  const { app, hook, count, emit, pass } = await start({ events: { maxEvents: 100 }, webhooks: { maxDeliveries: 100 } });
  const waiting = await hook(['agent:created']);
  const settled = await hook(['team:created']);
  // The 20 oldest deliveries stay pending; the 150 after them are settled.
  await emit(20, 'p', 'agent:created');
  await emit(150, 's');
  await d!.api('PATCH', `/v1/webhooks/${settled.id}`, { body: { enabled: false } });
  // Insertion order: SQLite's rowid, PostgreSQL's seq (migration 14).
  const order = isPostgres(app.db) ? 'seq' : 'rowid';
  const rows = (await app.db.prepare(`SELECT id, status FROM webhook_deliveries ORDER BY ${order}`).all()) as { id: string; status: string }[];
  expect(rows.map((r) => r.status)).toEqual([...Array(20).fill('pending'), ...Array(150).fill('failed')]);
  const events = await count('SELECT COUNT(*) AS n FROM events');
  const lastEvent = await app.events.lastId();

  expect(await pass()).toEqual({ events: events - 100, 'webhook deliveries': 50, 'routine work': 0 });
  // Events: exactly the newest 100 remain (ids are never reused).
  expect((await app.events.since(0, 1_000)).map((e) => e.id)).toEqual(Array.from({ length: 100 }, (_, i) => lastEvent - 99 + i));
  // Deliveries: the newest 100, and the pending ones older than those.
  const left = ((await app.db.prepare(`SELECT id FROM webhook_deliveries ORDER BY ${order}`).all()) as { id: string }[]).map((r) => r.id);
  expect(left).toEqual([...rows.slice(0, 20), ...rows.slice(70)].map((r) => r.id));
  expect(await count("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending'", waiting.id)).toBe(20);
  // Nothing is over the limits any more.
  expect(await pass()).toEqual({ events: 0, 'webhook deliveries': 0, 'routine work': 0 });
});

it('a pass goes on batch after batch until nothing is over the limits', async () => {
  const { hook, emit, pass } = await start({ events: { maxEvents: 100 }, webhooks: { maxDeliveries: 100 } });
  const w = await hook(['team:created']);
  for (let i = 0; i < 4; i++) await emit(600, `b${i}`);
  await d!.api('PATCH', `/v1/webhooks/${w.id}`, { body: { enabled: false } });
  const counts = await pass();
  expect(counts['webhook deliveries']).toBe(2_300);
  expect(counts.events).toBeGreaterThanOrEqual(2_300);
  expect(await pass()).toEqual({ events: 0, 'webhook deliveries': 0, 'routine work': 0 });
});
