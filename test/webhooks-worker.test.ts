import { afterEach, expect, it } from 'vitest';
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
  app.events.write(() => {
    for (let i = 0; i < 6; i++) app.events.emit('team:created', { name: `t${i}` });
  });
  await rx.waitFor(2);
  return w;
}

const settle = () => new Promise((r) => setTimeout(r, 300));

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
  await settle();
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

it('refuses a 101st webhook (every event is matched against each one in its transaction)', async () => {
  d = await startTestDaemon();
  const app = d.daemon.app;
  const now = new Date().toISOString();
  const insert = app.db.prepare("INSERT INTO webhooks (id, url, events, enabled, created_at, updated_at) VALUES (?, 'http://127.0.0.1:9/', '[\"*\"]', 0, ?, ?)");
  for (let i = 0; i < 100; i++) insert.run(`00000000-0000-7000-8000-${String(i).padStart(12, '0')}`, now, now);
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
  const worker = d!.daemon.app.services.get((await import('../src/resources/webhooks/service.js')).WEBHOOKS) as any;
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
