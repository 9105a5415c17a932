import { rmSync } from 'node:fs';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../src/index.js';
import { enqueueDeliveries, WEBHOOKS, type WebhookRuntime } from '../src/resources/webhooks/service.js';
import { FakeClock } from './fake-clock.js';
import { eventually, startTestDaemon, type TestDaemon } from './harness.js';
import { runCase, type ApiCase } from './scenarios.js';
import { startReceiver, type Receiver } from './webhook-receiver.js';

// Webhooks against the real daemon and a real receiver on port 0. Short retryBaseMs (10 ms) and
// timeoutMs (400 ms) keep the schedule's real waits small; the jitter source is fixed at its top.
// The delivery thread resolves evil.test to a link-local address, nat64.test to the NAT64 form of
// one (what DNS64 answers for a name whose A record is 169.254.169.254) and good.test to loopback.

const TOP = 0.999999;

let d: TestDaemon;
let rx: Receiver;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  d = await startTestDaemon({
    config: { webhooks: { retryBaseMs: 10, timeoutMs: 400, concurrency: 16 } },
    webhooks: { hosts: { 'evil.test': '169.254.169.254', 'good.test': '127.0.0.1', 'nat64.test': '64:ff9b::a9fe:a9fe' }, random: () => TOP },
  });
});
afterAll(async () => {
  await d.close();
});
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  cleanups.push(() => r.close());
  return r;
}

async function hook(url: string, events: string[] = ['*']): Promise<{ id: string; secret: string }> {
  const res = await d.api('POST', '/v1/webhooks', { body: { url, events } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const w = res.body.data;
  cleanups.push(() => d.api('DELETE', `/v1/webhooks/${w.id}`));
  return w;
}

const newTask = async (title = 'hello') => (await d.api('POST', '/api/v1/tasks', { body: { title } })).body.data;

async function settled(webhookId: string, count = 1): Promise<any[]> {
  let list: any[] = [];
  await eventually(async () => {
    list = (await d.api('GET', `/v1/webhooks/${webhookId}/deliveries`)).body.data;
    return list.length >= count && list.every((x: any) => x.status !== 'pending');
  }, 15_000);
  return list;
}

const detail = async (webhookId: string, deliveryId: string) => (await d.api('GET', `/v1/webhooks/${webhookId}/deliveries/${deliveryId}`)).body.data;

describe('webhook endpoints', () => {
  let id = '';
  const cases: ApiCase[] = [
    {
      name: 'create: 201 with the secret, events default ["*"]',
      method: 'POST',
      path: '/v1/webhooks',
      body: { url: 'http://127.0.0.1:9/hook', description: 'local' },
      status: 201,
      dataMatches: { url: 'http://127.0.0.1:9/hook', events: ['*'], description: 'local', enabled: true, disabledReason: null },
      onSuccess: (w) => {
        id = w.id;
        expect(w.secret).toMatch(/^whsec_/);
        expect(typeof w.createdAt).toBe('string');
      },
      events: [],
    },
    {
      name: 'unknown event name',
      method: 'POST',
      path: '/v1/webhooks',
      body: { url: 'http://127.0.0.1:9', events: ['task:nope'] },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.events.0',
      message: /task:nope/,
    },
    {
      name: 'unknown category',
      method: 'POST',
      path: '/v1/webhooks',
      body: { url: 'http://127.0.0.1:9', events: ['task:*', 'bogus:*'] },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.events.1',
      message: /bogus/,
    },
    { name: 'malformed pattern', method: 'POST', path: '/v1/webhooks', body: { url: 'http://127.0.0.1:9', events: ['task*'] }, status: 400, code: 'invalid_request', detailPath: 'body.events.0' },
    {
      name: 'link-local target refused at create',
      method: 'POST',
      path: '/v1/webhooks',
      body: { url: 'http://169.254.169.254/latest/meta-data' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.url',
      message: /link-local/,
    },
    { name: 'IPv6 link-local refused', method: 'POST', path: '/v1/webhooks', body: { url: 'http://[fe80::1]:8080/' }, status: 400, code: 'invalid_request', detailPath: 'body.url' },
    { name: 'multicast refused', method: 'POST', path: '/v1/webhooks', body: { url: 'http://239.1.1.1/' }, status: 400, code: 'invalid_request', detailPath: 'body.url', message: /multicast/ },
    { name: 'unspecified refused', method: 'POST', path: '/v1/webhooks', body: { url: 'http://0.0.0.0:80/' }, status: 400, code: 'invalid_request', detailPath: 'body.url', message: /unspecified/ },
    { name: 'not http', method: 'POST', path: '/v1/webhooks', body: { url: 'file:///etc/passwd' }, status: 400, code: 'invalid_request', detailPath: 'body.url' },
    {
      name: 'NAT64 form of a link-local address refused at create',
      method: 'POST',
      path: '/v1/webhooks',
      body: { url: 'http://[64:ff9b::169.254.169.254]/' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.url',
      message: /NAT64 form of 169\.254\.169\.254/,
    },
    {
      name: 'empty host refused at create',
      method: 'POST',
      path: '/v1/webhooks',
      body: { url: 'http:///x' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.url',
      message: /must name a host/,
    },
    {
      name: 'mapped loopback allowed',
      method: 'POST',
      path: '/v1/webhooks',
      body: { url: 'http://[::ffff:127.0.0.1]:9/' },
      status: 201,
      onSuccess: (w) => void cleanups.push(() => d.api('DELETE', `/v1/webhooks/${w.id}`)),
    },
    { name: 'unknown property', method: 'POST', path: '/v1/webhooks', body: { url: 'http://127.0.0.1:9', secret: 'mine' }, status: 400, code: 'invalid_request' },
    {
      name: 'get never shows the secret',
      method: 'GET',
      path: () => `/v1/webhooks/${id}`,
      status: 200,
      dataMatches: { id: expect.any(String) as unknown as string },
      onSuccess: (w) => expect(w).not.toHaveProperty('secret'),
    },
    { name: 'list never shows a secret', method: 'GET', path: '/v1/webhooks', status: 200, onSuccess: (l) => l.forEach((w: object) => expect(w).not.toHaveProperty('secret')) },
    {
      name: 'patch url, events, description, enabled',
      method: 'PATCH',
      path: () => `/v1/webhooks/${id}`,
      body: { url: 'http://localhost:9/h2', events: ['task:*', 'approval:resolved'], description: null, enabled: false },
      status: 200,
      dataMatches: { url: 'http://localhost:9/h2', events: ['task:*', 'approval:resolved'], description: null, enabled: false, disabledReason: 'disabled with PATCH' },
    },
    {
      name: 'patch refuses link-local at update',
      method: 'PATCH',
      path: () => `/v1/webhooks/${id}`,
      body: { url: 'http://[::ffff:169.254.1.1]/' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.url',
    },
    {
      name: 'patch refuses the IPv4-translated form at update',
      method: 'PATCH',
      path: () => `/v1/webhooks/${id}`,
      body: { url: 'http://[::ffff:0:a9fe:a9fe]/' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.url',
      message: /IPv4-translated form of 169\.254\.169\.254/,
    },
    {
      name: 'patch refuses 6to4 carrying a link-local address',
      method: 'PATCH',
      path: () => `/v1/webhooks/${id}`,
      body: { url: 'http://[2002:a9fe:a9fe::1]/' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.url',
      message: /6to4/,
    },
    {
      name: 'patch refuses an empty host',
      method: 'PATCH',
      path: () => `/v1/webhooks/${id}`,
      body: { url: 'https:///hooks' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.url',
      message: /must name a host/,
    },
    { name: 'test on a disabled webhook is 409', method: 'POST', path: () => `/v1/webhooks/${id}/test`, status: 409, code: 'conflict', message: /disabled/ },
    { name: 'rotate: a new secret', method: 'POST', path: () => `/v1/webhooks/${id}/rotate-secret`, body: {}, status: 200, onSuccess: (r) => expect(r.secret).toMatch(/^whsec_/) },
    {
      name: 'rotate: grace over a week refused',
      method: 'POST',
      path: () => `/v1/webhooks/${id}/rotate-secret`,
      body: { graceSeconds: 9_999_999 },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.graceSeconds',
    },
    { name: 'recover needs a time', method: 'POST', path: () => `/v1/webhooks/${id}/recover`, body: { since: 'yesterday' }, status: 400, code: 'invalid_request', detailPath: 'body.since' },
    { name: 'deliveries: bad before', method: 'GET', path: () => `/v1/webhooks/${id}/deliveries?before=x`, status: 400, code: 'invalid_request', detailPath: 'query.before' },
    { name: 'unknown delivery', method: 'GET', path: () => `/v1/webhooks/${id}/deliveries/0190a0b0-0000-7000-8000-000000000001`, status: 404, code: 'not_found' },
    { name: 'delete', method: 'DELETE', path: () => `/v1/webhooks/${id}`, status: 200, data: { removed: true } },
    { name: 'gone after delete', method: 'GET', path: () => `/v1/webhooks/${id}`, status: 404, code: 'not_found' },
    { name: 'delete again is 404', method: 'DELETE', path: () => `/v1/webhooks/${id}`, status: 404, code: 'not_found' },
    { name: 'needs a key', method: 'GET', path: '/v1/webhooks', status: 401, code: 'unauthorized' },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      if (c.code === 'unauthorized') {
        expect((await d.api('GET', '/v1/webhooks', { key: null })).status).toBe(401);
        return;
      }
      await runCase(d, c);
    });
  }
});

describe('deliveries', () => {
  it('are written in the same transaction as their event: none for a rolled-back change, all before any commit is heard', async () => {
    const w = await hook('http://127.0.0.1:9/never');
    const app = d.daemon.app;
    const count = async () => ((await app.db.prepare('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ?').get(w.id)) as { n: number }).n;
    await expect(
      (async () =>
        await app.events.write(async () => {
          app.events.emit('team:created', { name: 'ghost' });
          expect(await count()).toBe(1);
          throw new Error('roll back');
        }))(),
    ).rejects.toThrow('roll back');
    expect(await count()).toBe(0);
    // The count a listener reads the moment it hears the commit (its answer comes later: the state is asynchronous).
    let seen: Promise<number> | null = null;
    const off = app.events.subscribe(() => void (seen ??= count()));
    await app.events.write(async () => app.events.emit('team:created', { name: 'real' }));
    off();
    expect(await seen).toBe(1);
  });

  it('go only to webhooks still enabled with the patterns the sink read ahead (another daemon may change them while the event waits for its id)', async () => {
    const app = d.daemon.app;
    const [kept, disabled, deleted, changed] = [
      await hook('http://127.0.0.1:9/kept'),
      await hook('http://127.0.0.1:9/off'),
      await hook('http://127.0.0.1:9/gone'),
      await hook('http://127.0.0.1:9/changed'),
    ];
    // What the sink read before the event took its id; then, as another daemon would have, each is changed.
    const ahead = [kept, disabled, deleted, changed].map((w) => ({ id: w.id, events: '["*"]' }));
    expect((await d.api('PATCH', `/v1/webhooks/${disabled.id}`, { body: { enabled: false } })).status).toBe(200);
    expect((await d.api('DELETE', `/v1/webhooks/${deleted.id}`)).status).toBe(200);
    expect((await d.api('PATCH', `/v1/webhooks/${changed.id}`, { body: { events: ['task:*'] } })).status).toBe(200);
    const count = async (id: string) => ((await app.db.prepare('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ?').get(id)) as { n: number }).n;
    await app.events.write(async () => {
      const e = app.events.emit('team:created', { name: 'ahead' });
      await app.events.flush();
      // The sink, given the stale list for this event (the real one already wrote `kept`'s delivery).
      await enqueueDeliveries(app, e, ahead);
    });
    // kept: the real sink's and the stale call's; the others none (and no foreign-key failure for the deleted one).
    expect([await count(kept.id), await count(disabled.id), await count(deleted.id), await count(changed.id)]).toEqual([2, 0, 0, 0]);
  });

  it('succeed at the first attempt, signed so that verifyWebhook and the standardwebhooks package accept them', async () => {
    rx = await receiver();
    const w = await hook(`${rx.url}/in`, ['task:created']);
    const task = await newTask('signed');
    const [got] = await rx.waitFor(1);
    const h = got!.headers as Record<string, string>;
    expect(h['content-type']).toBe('application/json');
    expect(h['x-service-event']).toBe('task:created');
    expect(h['x-service-delivery-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(h['webhook-id']).toBe(h['x-service-delivery-id']);
    expect(h['x-service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyWebhook(got!.body, h['x-service-signature'], w.secret)).toBe(true);
    expect(verifyWebhook(got!.body, h['x-service-signature'], w.secret.replace(/.$/, 'A'))).toBe(false);
    expect(new StandardWebhook(w.secret).verify(got!.body, h)).toMatchObject({ event: 'task:created' });
    const env = JSON.parse(got!.body);
    expect(Object.keys(env)).toEqual(['event', 'data', 'timestamp']);
    expect(env).toMatchObject({ event: 'task:created', data: { taskId: task.id, title: 'signed' } });
    const [dl] = await settled(w.id);
    expect(dl).toMatchObject({ id: h['x-service-delivery-id'], status: 'succeeded', attempts: 1, lastStatusCode: 200, lastError: null, nextAttemptAt: null, event: 'task:created' });
    const full = await detail(w.id, dl.id);
    expect(full.body).toBe(got!.body);
    expect(full.attemptLog).toEqual([{ n: 1, at: expect.any(String), statusCode: 200, error: null, durationMs: expect.any(Number), responseBody: 'answer 200' }]);
  });

  it('are retried on 500, 429 (honouring Retry-After), 408 and a dropped connection, then succeed with the same delivery id', async () => {
    rx = await receiver();
    rx.plan(500, { status: 429, headers: { 'retry-after': '1' } }, 408, 'drop', 200);
    const w = await hook(rx.url);
    await newTask('retry');
    await rx.waitFor(5, 20_000);
    const [dl] = await settled(w.id);
    expect(dl).toMatchObject({ status: 'succeeded', attempts: 5, lastStatusCode: 200, lastError: null });
    expect(new Set(rx.received.map((r) => r.headers['x-service-delivery-id']))).toEqual(new Set([dl.id]));
    const log = (await detail(w.id, dl.id)).attemptLog as any[];
    expect(log.map((a) => a.statusCode)).toEqual([500, 429, 408, null, 200]);
    expect(log[3].error).toMatch(/socket|closed|ECONNRESET|other side/i);
    // Retry-After: 1 is a floor under the (10 ms × 4) backoff.
    expect(Date.parse(log[2].at) - Date.parse(log[1].at)).toBeGreaterThanOrEqual(999);
  });

  it('are retried when the receiver hangs past the deadline (timeoutMs covers the whole answer)', async () => {
    rx = await receiver();
    rx.plan('hang', { status: 200, body: 'x'.repeat(5000) });
    const w = await hook(rx.url);
    await newTask('hang');
    const [dl] = await settled(w.id);
    expect(dl).toMatchObject({ status: 'succeeded', attempts: 2 });
    const log = (await detail(w.id, dl.id)).attemptLog as any[];
    expect(log[0]).toMatchObject({ statusCode: null, error: 'no complete answer within 400 ms' });
    expect(log[0].durationMs).toBeGreaterThanOrEqual(390);
    // Only the first 1 KiB of an answer is kept.
    expect(log[1].responseBody).toBe('x'.repeat(1024));
  });

  it('stop after five attempts, spaced by the schedule', async () => {
    rx = await receiver();
    rx.fallback = 503;
    const w = await hook(rx.url);
    await newTask('always 503');
    const [dl] = await settled(w.id);
    expect(dl).toMatchObject({ status: 'failed', attempts: 5, lastStatusCode: 503, lastError: 'HTTP 503' });
    expect(rx.received).toHaveLength(5);
    expect(new Set(rx.received.map((r) => r.headers['x-service-delivery-id'])).size).toBe(1);
    const log = (await detail(w.id, dl.id)).attemptLog as { at: string }[];
    // With the jitter at its top, attempt n+1 comes no sooner than 10 ms × 4^(n−1) after attempt n.
    for (let n = 1; n < 5; n++) expect(Date.parse(log[n]!.at) - Date.parse(log[n - 1]!.at)).toBeGreaterThanOrEqual(Math.floor(TOP * 10 * 4 ** (n - 1)) - 1);
  });
});

describe('delivery outcomes', () => {
  it('another 4xx fails at once, with the answer kept', async () => {
    rx = await receiver();
    rx.plan({ status: 400, body: 'bad signature?' });
    const w = await hook(rx.url);
    await newTask('400');
    const [dl] = await settled(w.id);
    expect(dl).toMatchObject({ status: 'failed', attempts: 1, lastStatusCode: 400, lastError: 'HTTP 400' });
    expect((await detail(w.id, dl.id)).attemptLog[0].responseBody).toBe('bad signature?');
    expect(rx.received).toHaveLength(1);
  });

  it('410 Gone disables the webhook and emits webhook:disabled, which other webhooks receive', async () => {
    rx = await receiver();
    rx.plan(410);
    const other = await receiver();
    const gone = await hook(rx.url, ['task:*']);
    const watcher = await hook(other.url, ['webhook:*']);
    const before = await d.daemon.app.events.lastId();
    await newTask('410');
    const [dl] = await settled(gone.id);
    expect(dl).toMatchObject({ status: 'failed', attempts: 1, lastStatusCode: 410 });
    const w = (await d.api('GET', `/v1/webhooks/${gone.id}`)).body.data;
    expect(w).toMatchObject({ enabled: false, disabledReason: `${rx.url} answered 410 Gone` });
    const fired = (await d.daemon.app.events.since(before, 100)).filter((e) => e.name === 'webhook:disabled');
    expect(fired.map((e) => e.data)).toEqual([{ webhookId: gone.id, url: rx.url, reason: `${rx.url} answered 410 Gone` }]);
    const [note] = await other.waitFor(1);
    expect(JSON.parse(note!.body)).toMatchObject({ event: 'webhook:disabled', data: { webhookId: gone.id } });
    expect(verifyWebhook(note!.body, note!.headers['x-service-signature'] as string, watcher.secret)).toBe(true);
    // Disabled: new events make no deliveries for it, and redelivery is refused until it is enabled.
    await newTask('after 410');
    expect((await d.api('POST', `/v1/webhooks/${gone.id}/deliveries/${dl.id}/redeliver`)).status).toBe(409);
    expect((await d.api('GET', `/v1/webhooks/${gone.id}/deliveries`)).body.data).toHaveLength(1);
    expect((await d.api('PATCH', `/v1/webhooks/${gone.id}`, { body: { enabled: true } })).body.data).toMatchObject({ enabled: true, disabledReason: null });
  });

  it('a 3xx is not followed and is retried', async () => {
    rx = await receiver();
    rx.plan({ status: 301, headers: { location: '/elsewhere' } }, 200);
    const w = await hook(`${rx.url}/here`);
    await newTask('moved');
    const [dl] = await settled(w.id);
    expect(dl).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(rx.received.map((r) => r.path)).toEqual(['/here', '/here']);
    expect((await detail(w.id, dl.id)).attemptLog[0]).toMatchObject({ statusCode: 301, error: 'redirect (301 to /elsewhere) not followed' });
  });

  it('a name that resolves to a link-local address is refused at delivery, and the refusal is recorded', async () => {
    rx = await receiver();
    const evil = await hook(`http://evil.test:${rx.port}/`, ['task:created']);
    const good = await hook(`http://good.test:${rx.port}/ok`, ['task:created']);
    await newTask('dns');
    const [bad] = await settled(evil.id);
    expect(bad).toMatchObject({ status: 'failed', attempts: 1, lastStatusCode: null });
    expect(bad.lastError).toMatch(/evil\.test resolves to 169\.254\.169\.254, a link-local address/);
    const [ok] = await settled(good.id);
    expect(ok).toMatchObject({ status: 'succeeded' });
    expect(rx.received.map((r) => r.path)).toEqual(['/ok']);
  });

  it('a name that resolves to the NAT64 form of a link-local address is refused at delivery', async () => {
    rx = await receiver();
    const w = await hook(`http://nat64.test:${rx.port}/`, ['task:created']);
    await newTask('dns64');
    const [bad] = await settled(w.id);
    expect(bad).toMatchObject({ status: 'failed', attempts: 1, lastStatusCode: null });
    expect(bad.lastError).toMatch(/nat64\.test resolves to 64:ff9b::a9fe:a9fe, a link-local address \(NAT64 form of 169\.254\.169\.254\)/);
    expect(rx.received).toHaveLength(0);
  });

  it('a literal forbidden address already stored (accepted by an older svc) is refused at delivery, never connected to', async () => {
    const w = await hook('http://127.0.0.1:9/', ['task:created']);
    // A URL the API now refuses, as an older release could have stored it; a literal address is
    // connected to without a name lookup, so only the delivery's own check can stop it.
    await d.daemon.app.db.prepare('UPDATE webhooks SET url = ? WHERE id = ?').run('http://[::ffff:0:a9fe:a9fe]:9/', w.id);
    await newTask('literal');
    const [bad] = await settled(w.id);
    expect(bad).toMatchObject({ status: 'failed', attempts: 1, lastStatusCode: null });
    expect(bad.lastError).toBe('refused: ::ffff:0:a9fe:a9fe is a link-local address (IPv4-translated form of 169.254.169.254)');
  });
});

describe('redelivery, recovery, test, rotation', () => {
  it('redeliver sends the same body again as a new delivery (202)', async () => {
    rx = await receiver();
    const w = await hook(rx.url, ['task:created']);
    await newTask('again');
    const [first] = await settled(w.id);
    const res = await d.api('POST', `/v1/webhooks/${w.id}/deliveries/${first.id}/redeliver`);
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ status: 'pending', attempts: 0, redeliveryOf: first.id, eventId: first.eventId, event: 'task:created' });
    await rx.waitFor(2);
    expect(rx.received[1]!.body).toBe(rx.received[0]!.body);
    expect(rx.received[1]!.headers['x-service-delivery-id']).toBe(res.body.data.id);
    expect((await d.api('POST', `/v1/webhooks/${w.id}/deliveries/0190a0b0-0000-7000-8000-000000000009/redeliver`)).status).toBe(404);
  });

  it('recover re-sends every delivery that failed since a time, once', async () => {
    rx = await receiver();
    rx.plan(400, 400);
    const w = await hook(rx.url, ['task:created']);
    const since = new Date(Date.now() - 1000).toISOString();
    await newTask('r1');
    await newTask('r2');
    const failed = await settled(w.id, 2);
    expect(failed.map((x) => x.status)).toEqual(['failed', 'failed']);
    const res = await d.api('POST', `/v1/webhooks/${w.id}/recover`, { body: { since } });
    expect(res.status).toBe(202);
    expect(res.body.data.recovered).toBe(2);
    await rx.waitFor(4);
    const all = await settled(w.id, 4);
    expect(
      all
        .filter((x) => x.status === 'succeeded')
        .map((x) => x.redeliveryOf)
        .sort(),
    ).toEqual(failed.map((x) => x.id).sort());
    expect((await d.api('POST', `/v1/webhooks/${w.id}/recover`, { body: { since } })).body.data.recovered).toBe(0);
    expect((await d.api('POST', `/v1/webhooks/${w.id}/recover`, { body: { since: new Date().toISOString() } })).body.data.recovered).toBe(0);
  });

  it('test sends webhook:test to that webhook only (202)', async () => {
    rx = await receiver();
    const other = await receiver();
    const w = await hook(rx.url, ['task:*']);
    await hook(other.url, ['*']);
    const res = await d.api('POST', `/v1/webhooks/${w.id}/test`);
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ webhookId: w.id, event: 'webhook:test', status: 'pending' });
    const [got] = await rx.waitFor(1);
    expect(JSON.parse(got!.body)).toMatchObject({ event: 'webhook:test', data: { webhookId: w.id } });
    await settled(w.id);
    expect(other.received).toHaveLength(0);
  });

  it('rotation: both secrets verify during the grace window, only the new one after', async () => {
    rx = await receiver();
    const w = await hook(rx.url, ['task:created']);
    const r1 = (await d.api('POST', `/v1/webhooks/${w.id}/rotate-secret`, { body: { graceSeconds: 3600 } })).body.data;
    expect(r1.secret).not.toBe(w.secret);
    expect(Date.parse(r1.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(3500_000);
    await newTask('grace');
    const [a] = await rx.waitFor(1);
    const sigA = a!.headers['x-service-signature'] as string;
    expect(sigA.split(',').filter((p) => p.startsWith('v1='))).toHaveLength(2);
    expect(verifyWebhook(a!.body, sigA, w.secret)).toBe(true);
    expect(verifyWebhook(a!.body, sigA, r1.secret)).toBe(true);
    expect(new StandardWebhook(w.secret).verify(a!.body, a!.headers as Record<string, string>)).toBeTruthy();
    expect(new StandardWebhook(r1.secret).verify(a!.body, a!.headers as Record<string, string>)).toBeTruthy();
    const r2 = (await d.api('POST', `/v1/webhooks/${w.id}/rotate-secret`, { body: { graceSeconds: 0 } })).body.data;
    expect(r2.previousSecretExpiresAt).toBeNull();
    await newTask('after');
    const [, b] = await rx.waitFor(2);
    const sigB = b!.headers['x-service-signature'] as string;
    // The first secret was still in its grace window: r1 ended now, the original lives on until its own end.
    expect(verifyWebhook(b!.body, sigB, r2.secret)).toBe(true);
    expect(verifyWebhook(b!.body, sigB, r1.secret)).toBe(false);
    expect(verifyWebhook(b!.body, sigB, w.secret)).toBe(true);
    expect((await d.api('GET', `/v1/webhooks/${w.id}`)).body.data.secretRotatedAt).toEqual(expect.any(String));
  });

  it('at most 4 old secrets sign beside the current one, however often it is rotated', async () => {
    rx = await receiver();
    const w = await hook(rx.url, ['task:created']);
    const secrets = [w.secret];
    for (let i = 0; i < 6; i++) secrets.push((await d.api('POST', `/v1/webhooks/${w.id}/rotate-secret`, { body: { graceSeconds: 3600 } })).body.data.secret);
    await newTask('many rotations');
    const [got] = await rx.waitFor(1);
    const sig = got!.headers['x-service-signature'] as string;
    expect(sig.split(',').filter((p) => p.startsWith('v1='))).toHaveLength(5);
    expect(secrets.map((s) => verifyWebhook(got!.body, sig, s))).toEqual([false, false, true, true, true, true, true]);
  });

  it('secrets are sealed in the state DB, never stored in plaintext', async () => {
    const w = await hook('http://127.0.0.1:9/');
    const rows = (await d.daemon.app.db.prepare('SELECT sealed FROM webhook_secrets WHERE webhook_id = ?').all(w.id)) as { sealed: Buffer }[];
    expect(rows).toHaveLength(1);
    expect(rows[0]!.sealed.includes(Buffer.from(w.secret))).toBe(false);
    expect(rows[0]!.sealed.includes(Buffer.from(w.secret.slice(6), 'base64'))).toBe(false);
  });
});

describe('delivery log', () => {
  it('lists newest first with limit and before, stable while new deliveries arrive', async () => {
    rx = await receiver();
    const w = await hook(rx.url, ['task:created']);
    for (let i = 0; i < 5; i++) await newTask(`page ${i}`);
    const all = await settled(w.id, 5);
    const first = await d.api('GET', `/v1/webhooks/${w.id}/deliveries?limit=2`);
    expect(first.body.data.map((x: any) => x.id)).toEqual(all.slice(0, 2).map((x) => x.id));
    const cursor = first.headers.get('x-next-cursor');
    expect(cursor).toBe(all[1].id);
    await newTask('arrives meanwhile');
    const second = await d.api('GET', `/v1/webhooks/${w.id}/deliveries?limit=2&before=${cursor}`);
    expect(second.body.data.map((x: any) => x.id)).toEqual(all.slice(2, 4).map((x) => x.id));
    const last = await d.api('GET', `/v1/webhooks/${w.id}/deliveries?limit=2&before=${all[3].id}`);
    expect(last.body.data.map((x: any) => x.id)).toEqual([all[4].id]);
    expect(last.headers.get('x-next-cursor')).toBeNull();
  });

  it('DELETE cancels pending deliveries', async () => {
    rx = await receiver();
    // Failed, with the next attempt an hour away (Retry-After): with a plain 500 and this file's
    // 10 ms retry base, a retry could already be on the wire when the test pushes it back below.
    rx.fallback = { status: 503, headers: { 'retry-after': '3600' } };
    const app = d.daemon.app;
    const res = await d.api('POST', '/v1/webhooks', { body: { url: rx.url } });
    const id = res.body.data.id;
    await newTask('to cancel');
    await rx.waitFor(1);
    await eventually(async () => (await d.api('GET', `/v1/webhooks/${id}/deliveries`)).body.data[0]?.attempts >= 1);
    // A long backoff: the delivery waits, pending, for its next attempt.
    await app.db.prepare("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE webhook_id = ? AND status = 'pending'").run(Date.now() + 3_600_000, id);
    expect((await d.api('GET', `/v1/webhooks/${id}/deliveries`)).body.data[0].status).toBe('pending');
    expect((await d.api('DELETE', `/v1/webhooks/${id}`)).status).toBe(200);
    expect(((await app.db.prepare('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ?').get(id)) as { n: number }).n).toBe(0);
    const n = rx.received.length;
    await (app.services.get(WEBHOOKS) as WebhookRuntime).settled({ wire: true });
    expect(rx.received.length).toBe(n);
  });

  it('PATCH enabled: false fails what was pending', async () => {
    const w = await hook('http://127.0.0.1:9/');
    const app = d.daemon.app;
    await app.events.write(async () => {
      app.events.emit('team:created', { name: 'pending-one' });
      await app.db.prepare('UPDATE webhook_deliveries SET next_attempt_at = ? WHERE webhook_id = ?').run(Date.now() + 3_600_000, w.id);
    });
    await d.api('PATCH', `/v1/webhooks/${w.id}`, { body: { enabled: false } });
    const [dl] = (await d.api('GET', `/v1/webhooks/${w.id}/deliveries`)).body.data;
    expect(dl).toMatchObject({ status: 'failed', lastError: 'webhook disabled before this delivery was made', nextAttemptAt: null });
  });
});

describe('volume', () => {
  it('1,000 events to 3 webhooks: every delivery made, never more often than attempted', async () => {
    const rxs = [await receiver(), await receiver(), await receiver()];
    const hooks = [];
    for (const r of rxs) hooks.push(await hook(r.url, ['team:created']));
    const app = d.daemon.app;
    // 1,000 events, as 10 API writes of 100 each would make: straight into the outbox, in batches.
    for (let b = 0; b < 10; b++)
      await app.events.write(async () => {
        for (let i = 0; i < 100; i++) app.events.emit('team:created', { name: `t${b * 100 + i}` });
      });
    for (const r of rxs) await r.waitFor(1000, 60_000);
    await eventually(async () => ((await app.db.prepare("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending' AND event = 'team:created'").get()) as { n: number }).n === 0, 30_000);
    await (app.services.get(WEBHOOKS) as WebhookRuntime).settled({ wire: true });
    for (const [i, r] of rxs.entries()) {
      expect(new Set(r.received.map((x) => x.headers['x-service-delivery-id'])).size).toBe(1000);
      expect(new Set(r.received.map((x) => JSON.parse(x.body).data.name)).size).toBe(1000);
      const rows = (await app.db.prepare("SELECT id, attempts FROM webhook_deliveries WHERE webhook_id = ? AND status = 'succeeded'").all(hooks[i].id)) as { id: string; attempts: number }[];
      expect(rows).toHaveLength(1000);
      // The receiver shares this thread with the in-process daemon (whose statements block it on a
      // PostgreSQL state), and on a loaded machine (Chromium beside it in CI) an answer can miss
      // the file's 400 ms timeoutMs: the delivery is then tried again (at-least-once). Never more
      // often than its recorded attempts: a copy without an attempt behind it would be a delivery
      // made twice.
      const got = new Map<string, number>();
      for (const x of r.received) got.set(x.headers['x-service-delivery-id'] as string, (got.get(x.headers['x-service-delivery-id'] as string) ?? 0) + 1);
      for (const x of rows) expect(got.get(x.id), x.id).toBeLessThanOrEqual(x.attempts);
    }
    // On a PostgreSQL state each of the 3,000 deliveries' claims and records is a round trip that
    // blocks the daemon's thread: about 10 s alone, several times that beside the rest of the suite.
  }, 120_000);
});

describe('events written at start-up', () => {
  it('an approval timeout and a lease that ran out while the daemon was down are delivered, written before it listens', async () => {
    const clock = new FakeClock(Date.parse('2033-01-02T03:04:05.000Z'));
    const r = await receiver();
    const config = { tasks: { leaseSeconds: 60 }, webhooks: { retryBaseMs: 10, timeoutMs: 400 } };
    const first = await startTestDaemon({ clock, keepRoot: true, config });
    const root = first.root;
    try {
      expect((await first.api('POST', '/v1/webhooks', { body: { url: r.url, events: ['approval:resolved', 'task:lease_expired'] } })).status).toBe(201);
      expect((await first.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
      const task = (await first.api('POST', '/api/v1/tasks', { body: { title: 'held while down' } })).body.data;
      expect((await first.api('POST', `/api/v1/tasks/${task.id}/claim`, { body: { agent: 'ana' } })).status).toBe(200);
      const approval = (await first.api('POST', '/api/v1/approvals', { body: { requestedBy: 'ana', title: 'decided while down', timeoutSeconds: 30 } })).body.data;
      const mark = await first.daemon.app.events.lastId();
      await first.close();

      await clock.passTo(clock.now() + 120_000);
      const second = await startTestDaemon({ clock, root, config });
      try {
        // Both were applied by the start-up passes, before the daemon listened...
        const written = (await second.daemon.app.events.since(mark, 100)).filter((e) => e.name === 'approval:resolved' || e.name === 'task:lease_expired');
        expect(written.map((e) => e.name).sort()).toEqual(['approval:resolved', 'task:lease_expired']);
        // ...and each has its delivery, sent.
        const got = await r.waitFor(2);
        const sent = got.map((x) => JSON.parse(x.body) as { event: string; data: Record<string, unknown> });
        expect(sent.map((x) => x.event).sort()).toEqual(['approval:resolved', 'task:lease_expired']);
        expect(sent.find((x) => x.event === 'approval:resolved')!.data).toMatchObject({ approvalId: approval.id });
        expect(sent.find((x) => x.event === 'task:lease_expired')!.data).toMatchObject({ taskId: task.id, agent: 'ana' });
      } finally {
        await second.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
