import { afterEach, expect, it } from 'vitest';
import { WEBHOOKS, type WebhookRuntime } from '../src/resources/webhooks/service.js';
import { FakeClock } from './fake-clock.js';
import { eventually, startTestDaemon, type TestDaemon } from './harness.js';
import { startReceiver, type Receiver } from './webhook-receiver.js';

// The worker's bounds: at most webhooks.concurrency deliveries on the wire, and claimed deliveries
// that are not on the wire yet never go out after their webhook changed, was disabled or deleted.

let d: TestDaemon | undefined;
let rx: Receiver | undefined;
afterEach(async () => {
  await rx?.close();
  await d?.close();
});

async function setup(): Promise<{ id: string }> {
  rx = await startReceiver();
  rx.fallback = 'hang';
  d = await startTestDaemon({ config: { webhooks: { concurrency: 2, timeoutMs: 60_000, retryBaseMs: 10 } } });
  const w = (await d.api('POST', '/v1/webhooks', { body: { url: `${rx.url}/old`, events: ['team:created'] } })).body.data;
  const app = d.daemon.app;
  await app.events.write(async () => {
    for (let i = 0; i < 6; i++) app.events.emit('team:created', { name: `t${i}` });
  });
  await rx.waitFor(2);
  return w;
}

/** The worker has nothing it could do now (`wire`: and nothing on the wire): no sleep bounds "nothing else came". */
const settle = (opts: { wire?: boolean } = {}) => (d!.daemon.app.services.get(WEBHOOKS) as WebhookRuntime).settled(opts);

it('keeps at most webhooks.concurrency deliveries on the wire', async () => {
  await setup();
  await settle();
  expect(rx!.received).toHaveLength(2);
});

it('DELETE: claimed deliveries not yet sent are never sent', async () => {
  const w = await setup();
  expect((await d!.api('DELETE', `/v1/webhooks/${w.id}`)).status).toBe(200);
  // The two on the wire end (the receiver drops them), freeing both slots; nothing else may come.
  rx!.fallback = 200;
  rx!.dropHanging();
  await settle({ wire: true });
  expect(rx!.received).toHaveLength(2);
});

it('PATCH url: claimed deliveries not yet sent go to the new URL', async () => {
  const w = await setup();
  const next = await startReceiver();
  try {
    await d!.api('PATCH', `/v1/webhooks/${w.id}`, { body: { url: `${next.url}/new` } });
    // The old receiver drops the two it held: they are retried, like the rest, at the new URL.
    const old = rx!;
    rx = undefined;
    await old.close();
    await next.waitFor(6);
    expect(next.received.every((r) => r.path === '/new')).toBe(true);
    expect(new Set(next.received.map((r) => JSON.parse(r.body).data.name)).size).toBe(6);
    expect(old.received).toHaveLength(2);
  } finally {
    await next.close();
  }
});

it('PATCH enabled: false: claimed deliveries not yet sent fail instead of waiting', async () => {
  const w = await setup();
  await d!.api('PATCH', `/v1/webhooks/${w.id}`, { body: { enabled: false } });
  let list: any[] = [];
  await eventually(async () => {
    list = (await d!.api('GET', `/v1/webhooks/${w.id}/deliveries`)).body.data;
    return list.filter((x) => x.status === 'failed').length === 4;
  });
  await settle();
  expect(rx!.received).toHaveLength(2);
});

it('a receiver that hangs holds only its own slots: a healthy one gets every delivery meanwhile', async () => {
  rx = await startReceiver();
  rx.fallback = 'hang';
  const healthy = await startReceiver();
  try {
    d = await startTestDaemon({ config: { webhooks: { concurrency: 16, perEndpointConcurrency: 4, timeoutMs: 60_000 } } });
    const app = d.daemon.app;
    const stuck = (await d.api('POST', '/v1/webhooks', { body: { url: rx.url, events: ['team:created'] } })).body.data;
    const ok = (await d.api('POST', '/v1/webhooks', { body: { url: healthy.url, events: ['agent:created'] } })).body.data;
    // 40 deliveries for the hanging receiver first: with one shared pool they would take every slot.
    await app.events.write(async () => {
      for (let i = 0; i < 40; i++) app.events.emit('team:created', { name: `t${i}` });
    });
    await rx.waitFor(4);
    await app.events.write(async () => {
      for (let i = 0; i < 20; i++) app.events.emit('agent:created', { name: `a${i}` });
    });
    await healthy.waitFor(20);
    let list: any[] = [];
    await eventually(async () => {
      list = (await d!.api('GET', `/v1/webhooks/${ok.id}/deliveries`)).body.data;
      return list.length === 20 && list.every((x) => x.status === 'succeeded');
    });
    expect(list.every((x) => x.attempts === 1)).toBe(true);
    // The hanging receiver still holds exactly its 4 slots, none answered, none retried yet.
    expect(rx.received).toHaveLength(4);
    const mine = (await d.api('GET', `/v1/webhooks/${stuck.id}/deliveries?limit=200`)).body.data as any[];
    expect(mine).toHaveLength(40);
    expect(mine.every((x) => x.status === 'pending' && x.attempts === 0)).toBe(true);
  } finally {
    await healthy.close();
  }
});

it('every time the worker reads is the daemon clock: timestamps, signatures, and retries that wait for it', async () => {
  const T0 = Date.parse('2030-01-01T00:00:00.000Z');
  const clock = new FakeClock(T0);
  rx = await startReceiver();
  rx.plan({ status: 503, headers: { 'retry-after': 'Tue, 01 Jan 2030 00:00:30 GMT' } }, 200);
  d = await startTestDaemon({ clock, config: { webhooks: { retryBaseMs: 1000 } }, webhooks: { random: () => 0.5 } });
  const w = (await d.api('POST', '/v1/webhooks', { body: { url: rx.url, events: ['team:created'] } })).body.data;
  const app = d.daemon.app;
  await app.events.write(async () => app.events.emit('team:created', { name: 'clocked' }));
  const [first] = await rx.waitFor(1);
  expect(JSON.parse(first!.body).timestamp).toBe('2030-01-01T00:00:00.000Z');
  expect(first!.headers['webhook-timestamp']).toBe(String(T0 / 1000));
  let dl: any;
  await eventually(async () => {
    dl = (await d!.api('GET', `/v1/webhooks/${w.id}/deliveries`)).body.data[0];
    return dl.attempts === 1;
  });
  // Retry-After is an HTTP date read against the daemon's clock: 30 s after T0 (above the jittered 500 ms).
  expect(dl).toMatchObject({ status: 'pending', nextAttemptAt: '2030-01-01T00:00:30.000Z' });
  expect(clock.nextAt).toBe(T0 + 30_000);
  // The wake-up is a timer on that clock, and claiming is synchronous in it: not taken a
  // millisecond early, taken (marked in flight) the moment it is due.
  const inFlight = async () => ((await app.db.prepare('SELECT in_flight AS f FROM webhook_deliveries WHERE id = ?').get(dl.id)) as { f: number }).f;
  await clock.pass(29_999);
  expect(await inFlight()).toBe(0);
  await clock.pass(1);
  expect(await inFlight()).toBe(1);
  await rx.waitFor(2);
  await eventually(async () => (await d!.api('GET', `/v1/webhooks/${w.id}/deliveries`)).body.data[0].status === 'succeeded');
  const log = (await d.api('GET', `/v1/webhooks/${w.id}/deliveries/${dl.id}`)).body.data.attemptLog;
  expect(log.map((a: { at: string; statusCode: number }) => [a.at, a.statusCode])).toEqual([
    ['2030-01-01T00:00:00.000Z', 503],
    ['2030-01-01T00:00:30.000Z', 200],
  ]);
});

it('refuses a 101st webhook (every event is matched against each one in its transaction)', async () => {
  d = await startTestDaemon();
  const app = d.daemon.app;
  const now = new Date().toISOString();
  const insert = app.db.prepare("INSERT INTO webhooks (id, url, events, enabled, created_at, updated_at) VALUES (?, 'http://127.0.0.1:9/', '[\"*\"]', 0, ?, ?)");
  for (let i = 0; i < 100; i++) await insert.run(`00000000-0000-7000-8000-${String(i).padStart(12, '0')}`, now, now);
  const res = await d.api('POST', '/v1/webhooks', { body: { url: 'http://127.0.0.1:9/' } });
  expect(res.status).toBe(409);
  expect(res.body).toMatchObject({ code: 'conflict', error: expect.stringMatching(/at most 100 webhooks/) });
});

it('a graceful stop cuts attempts on the wire short without counting them, and the next start sends them under the same ids', async () => {
  await setup();
  const root = d!.root;
  const held = rx!.received.map((r) => r.headers['x-service-delivery-id']);
  // Closing must not wait for the 60 s deadline of the two held requests.
  await d!.daemon.close();
  d = undefined;
  rx!.fallback = 200;
  d = await startTestDaemon({ root });
  let list: any[] = [];
  await eventually(async () => {
    list = (await d!.api('GET', `/v1/webhooks/${(await d!.api('GET', '/v1/webhooks')).body.data[0].id}/deliveries`)).body.data;
    return list.length === 6 && list.every((x) => x.status === 'succeeded');
  }, 10_000);
  expect(list.every((x) => x.attempts === 1)).toBe(true);
  const answered = rx!.received.filter((r) => r.answer === 200).map((r) => r.headers['x-service-delivery-id']);
  for (const id of held) expect(answered).toContain(id);
});

it('a delivery thread that dies is replaced, and what it held is retried', async () => {
  await setup();
  const worker = d!.daemon.app.services.get(WEBHOOKS) as any;
  rx!.fallback = 200;
  await worker.sender.thread.terminate();
  const id = (await d!.api('GET', '/v1/webhooks')).body.data[0].id;
  let list: any[] = [];
  await eventually(async () => {
    list = (await d!.api('GET', `/v1/webhooks/${id}/deliveries`)).body.data;
    return list.length === 6 && list.every((x) => x.status === 'succeeded');
  }, 10_000);
  expect(list.filter((x) => x.attempts > 1).length).toBeGreaterThanOrEqual(2);
});
