import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSince } from '../src/resources/webhooks/command.js';
import { verifyWebhook } from '../src/resources/webhooks/verify.js';
import { startReady, svcAgainst } from './cli-helpers.js';
import { eventually, startTestDaemon, type TestDaemon } from './harness.js';
import { startReceiver, type Receiver } from './webhook-receiver.js';

let d: TestDaemon;
let rx: Receiver;
beforeAll(async () => {
  d = await startTestDaemon({ config: { webhooks: { retryBaseMs: 10, timeoutMs: 1000 } } });
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
  await d.close();
});

it('parses --since as a duration back from now or an ISO time', () => {
  const now = Date.parse('2026-05-01T12:00:00.000Z');
  expect(parseSince('1h', now)).toBe('2026-05-01T11:00:00.000Z');
  expect(parseSince('30m', now)).toBe('2026-05-01T11:30:00.000Z');
  expect(parseSince('2d', now)).toBe('2026-04-29T12:00:00.000Z');
  expect(parseSince('2026-04-01T00:00:00Z', now)).toBe('2026-04-01T00:00:00.000Z');
  expect(() => parseSince('yesterday', now)).toThrow(/--since/);
});

describe('svc webhooks', () => {
  let id = '';
  it('add prints the secret once, with a warning to store it', async () => {
    const r = await svcAgainst(d, ['webhooks', 'add', rx.url, '--events', 'task:*,approval:resolved', '--description', 'ci']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/secret: whsec_/);
    expect(r.stderr).toMatch(/shown only once/);
    id = /added (\S+)/.exec(r.stdout)![1]!;
  });

  it('ls, show and set', async () => {
    const ls = await svcAgainst(d, ['webhooks', 'ls']);
    expect(ls.stdout).toContain(rx.url);
    expect(ls.stdout).not.toContain('whsec_');
    // The table shows short ids, as tasks, missions and approvals do.
    expect(ls.stdout).toContain(id.slice(-8));
    expect(ls.stdout).not.toContain(id);
    // A short id (the last 8 characters, or a unique prefix) works like the full one.
    const short = await svcAgainst(d, ['--json', 'webhooks', 'show', id.slice(-8)]);
    expect(short.code, short.stderr).toBe(0);
    expect(JSON.parse(short.stdout).id).toBe(id);
    expect((await svcAgainst(d, ['webhooks', 'show', id.slice(0, 3)])).code).toBe(2);
    const show = await svcAgainst(d, ['--json', 'webhooks', 'show', id]);
    expect(JSON.parse(show.stdout)).toMatchObject({ id, events: ['task:*', 'approval:resolved'] });
    const set = await svcAgainst(d, ['--json', 'webhooks', 'set', id, '--events', 'task:created']);
    expect(JSON.parse(set.stdout).events).toEqual(['task:created']);
    expect((await svcAgainst(d, ['webhooks', 'set', id])).code).toBe(2);
    const bad = await svcAgainst(d, ['webhooks', 'add', 'http://169.254.169.254/']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/link-local/);
  });

  it('test, deliveries, delivery, redeliver, recover', async () => {
    const t = await svcAgainst(d, ['--json', 'webhooks', 'test', id]);
    expect(t.code, t.stderr).toBe(0);
    const deliveryId = JSON.parse(t.stdout).id;
    await rx.waitFor(1);
    await eventually(async () => (await d.api('GET', `/v1/webhooks/${id}/deliveries/${deliveryId}`)).body.data.status === 'succeeded');
    const list = await svcAgainst(d, ['webhooks', 'deliveries', id]);
    expect(list.stdout).toMatch(/succeeded\s+webhook:test/);
    // Delivery ids take short forms like every other id: the table prints the last 8 characters.
    expect(list.stdout).toContain(deliveryId.slice(-8));
    expect(list.stdout).not.toContain(deliveryId);
    const one = await svcAgainst(d, ['webhooks', 'delivery', id, deliveryId.slice(-8)]);
    expect(one.stdout).toMatch(/HTTP 200/);
    const re = await svcAgainst(d, ['webhooks', 'redeliver', id, deliveryId.slice(-6)]);
    expect(re.stdout).toMatch(new RegExp(`queued \\S+ \\(re-sends ${deliveryId.slice(-8)}\\)`));
    expect((await svcAgainst(d, ['webhooks', 'delivery', id, 'ffffffff'])).code).toBe(1);
    const rec = await svcAgainst(d, ['webhooks', 'recover', id, '--since', '1h']);
    expect(rec.stdout).toMatch(/queued 0 failed deliveries again/);
    expect((await svcAgainst(d, ['webhooks', 'recover', id, '--since', 'soon'])).code).toBe(2);
  });

  it('rotate prints the new secret; rm needs --yes without a terminal', async () => {
    const r = await svcAgainst(d, ['webhooks', 'rotate', id, '--grace', '0']);
    expect(r.stdout).toMatch(/secret: whsec_\S+\nold secret retired now/);
    const no = await svcAgainst(d, ['webhooks', 'rm', id]);
    expect(no.code).toBe(2);
    expect(no.stderr).toContain(`delete webhook ${id.slice(-8)} and cancel its pending deliveries: refusing without confirmation`);
    expect(no.stderr).toMatch(/--yes/);
    expect((await svcAgainst(d, ['webhooks', 'rm', id, '--yes'])).code).toBe(0);
    expect((await d.api('GET', `/v1/webhooks/${id}`)).status).toBe(404);
  });
});

/** Spawns `svc <args>` against the test daemon and resolves once it says it is ready to receive. */
const listening = (args: string[]) => startReady(['--url', d.url, '--api-key', d.key, ...args]);

describe('svc webhooks listen', () => {
  it('registers a webhook, prints each verified delivery, forwards it, and removes the webhook on Ctrl-C', async () => {
    const fwd = await startReceiver();
    const { child, out, err } = await listening(['webhooks', 'listen', '--events', 'team:created', '--forward-to', `${fwd.url}/local`]).catch(async (e: unknown) => {
      await fwd.close();
      throw e;
    });
    try {
      const hooks = (await d.api('GET', '/v1/webhooks')).body.data.filter((w: any) => /svc webhooks listen/.test(w.description ?? ''));
      expect(hooks).toHaveLength(1);
      expect(hooks[0].events).toEqual(['team:created']);
      await d.api('POST', '/api/v1/agents/teams', { body: { name: 'listeners', description: '' } });
      await eventually(() => /team:created/.test(out()), 10_000);
      expect(out()).toMatch(/^\S+Z {2}team:created {2}[0-9a-f-]{36} → http:\/\/127\.0\.0\.1:\d+\/local 200\n$/);
      const [got] = await fwd.waitFor(1);
      expect(JSON.parse(got!.body)).toMatchObject({ event: 'team:created', data: { name: 'listeners' } });
      expect(got!.headers['x-service-signature']).toMatch(/^t=\d+,v1=/);
      // The forward verifies with the secret the Ready line shows, by the Standard Webhooks headers too.
      const secret = /verify them with the secret (whsec_\S+)\./.exec(err())![1]!;
      expect(verifyWebhook(got!.body, got!.headers['x-service-signature'] as string, secret)).toBe(true);
      const std = new StandardWebhook(secret).verify(got!.body, {
        'webhook-id': got!.headers['webhook-id'] as string,
        'webhook-timestamp': got!.headers['webhook-timestamp'] as string,
        'webhook-signature': got!.headers['webhook-signature'] as string,
      });
      expect(std).toMatchObject({ event: 'team:created' });
      child.kill('SIGINT');
      const code = await new Promise((r) => child.on('close', r));
      expect(code).toBe(0);
      expect(err()).toMatch(/Removed webhook/);
      expect((await d.api('GET', '/v1/webhooks')).body.data.filter((w: any) => w.id === hooks[0].id)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
      await fwd.close();
    }
  });
});

describe('svc webhooks listen --json', () => {
  it('prints each delivery body as one JSON line', async () => {
    const { child, out } = await listening(['--json', 'webhooks', 'listen', '--events', 'team:*']);
    try {
      await d.api('POST', '/api/v1/agents/teams', { body: { name: 'json-listeners', description: '' } });
      await eventually(() => out().endsWith('\n'), 10_000);
      expect(JSON.parse(out())).toMatchObject({ event: 'team:created', data: { name: 'json-listeners' }, timestamp: expect.any(String) });
      child.kill('SIGTERM');
      expect(await new Promise((r) => child.on('close', r))).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
