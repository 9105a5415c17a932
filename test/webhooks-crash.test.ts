import { afterEach, expect, it } from 'vitest';
import { readLocalKey } from '../src/state-dir.js';
import { exited, serve } from './cli-helpers.js';
import { eventually, makeProject } from './harness.js';
import { startReceiver, type Receiver } from './webhook-receiver.js';

// Never lost: a daemon killed with SIGKILL while deliveries are pending and in flight sends every
// one of them after a restart, in-flight ones again under the same delivery id.

let rx: Receiver | undefined;
const children: { kill(sig?: NodeJS.Signals): boolean }[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await rx?.close();
});

it('SIGKILL with deliveries pending and in flight: after a restart every delivery is made', async () => {
  rx = await startReceiver();
  // The receiver holds every request open: 16 deliveries in flight (webhooks.concurrency, all one
  // webhook's here), the rest pending.
  rx.fallback = 'hang';
  const root = makeProject({ webhooks: { timeoutMs: 60_000, retryBaseMs: 10, concurrency: 16, perEndpointConcurrency: 16 } });
  const first = await serve(root);
  children.push(first.child);
  const key = readLocalKey(root)!;
  const call = async (method: string, path: string, body?: unknown, url = first.url) => {
    const res = await fetch(url + path, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return (await res.json()) as { data: any };
  };
  const hook = (await call('POST', '/v1/webhooks', { url: `${rx.url}/in`, events: ['task:created'] })).data;
  for (let i = 0; i < 40; i++) await call('POST', '/api/v1/tasks', { title: `crash ${i}` });
  await rx.waitFor(16);
  const inFlight = new Set(rx.received.map((r) => r.headers['x-service-delivery-id'] as string));
  expect(inFlight.size).toBe(16);

  first.child.kill('SIGKILL');
  await exited(first.child);
  rx.fallback = 200;

  const second = await serve(root);
  children.push(second.child);
  let deliveries: any[] = [];
  await eventually(async () => {
    deliveries = (await call('GET', `/v1/webhooks/${hook.id}/deliveries?limit=200`, undefined, second.url)).data;
    return deliveries.length === 40 && deliveries.every((x) => x.status === 'succeeded');
  }, 20_000);
  const answered = rx.received.filter((r) => r.answer === 200).map((r) => r.headers['x-service-delivery-id'] as string);
  expect(new Set(answered)).toEqual(new Set(deliveries.map((x) => x.id)));
  // What was in flight at the kill was sent again with the same id, so receivers can de-duplicate.
  for (const id of inFlight) expect(answered).toContain(id);
  expect(new Set(rx.received.map((r) => JSON.parse(r.body).data.title)).size).toBe(40);
  second.child.kill('SIGTERM');
  await exited(second.child);
});
