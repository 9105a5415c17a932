import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { WEBHOOKS } from '../src/resources/webhooks/service.js';
import * as store from '../src/resources/webhooks/store.js';
import { eventually, makeProject, startTestDaemon, type TestDaemon } from './harness.js';
import { freshStateDatabase } from './state-pg.js';
import { startReceiver, type Receiver } from './webhook-receiver.js';

// Two in-process daemons (two project roots) on ONE PostgreSQL state database act as one webhook
// service: every delivery is sent, by one daemon at a time, and a claim whose daemon stopped is
// taken by the other once its lease runs out. The daemons, the receiver and the test share one
// event loop that every PostgreSQL statement blocks, so timeoutMs is generous: an answer late
// under load would be a retry, not what these tests look at.

const pgUrl = inject('pgUrl');
const TIMEOUT_MS = 5_000;

let a: TestDaemon;
let b: TestDaemon;
let stateUrl = '';
const vaultKey = randomBytes(32).toString('base64');
const cleanups: (() => Promise<unknown>)[] = [];

const config = { webhooks: { retryBaseMs: 10, timeoutMs: TIMEOUT_MS, concurrency: 8 } };
/**
 * A daemon on the shared state, with the vault key every daemon there shares. Nothing else is
 * copied between them: the key that seals the webhooks' signing secrets is kept in the state.
 */
async function start(): Promise<TestDaemon> {
  return startTestDaemon({ root: makeProject(config), env: { SVC_STATE_URL: stateUrl, SVC_VAULT_KEY: vaultKey }, webhooks: { random: () => 0.999999 } });
}

describe.skipIf(!pgUrl)(`webhooks on one PostgreSQL state shared by two daemons${pgUrl ? '' : ` (skipped: ${inject('pgSkip')})`}`, () => {
  beforeAll(async () => {
    stateUrl = await freshStateDatabase();
    a = await start();
    b = await start();
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  async function receiver(): Promise<Receiver> {
    const r = await startReceiver();
    cleanups.push(() => r.close());
    return r;
  }

  async function hook(url: string, events: string[]): Promise<string> {
    const res = await a.api('POST', '/v1/webhooks', { body: { url, events } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const id = res.body.data.id as string;
    cleanups.push(() => a.api('DELETE', `/v1/webhooks/${id}`));
    return id;
  }

  const deliveries = async (webhookId: string) =>
    (await a.daemon.app.db.prepare('SELECT id, status, attempts, in_flight AS inFlight FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id').all(webhookId)) as {
      id: string;
      status: string;
      attempts: number;
      inFlight: number;
    }[];

  const emit = async (d: TestDaemon, name: string) => await d.daemon.app.events.write(async () => d.daemon.app.events.emit('team:created', { name }));

  /**
   * Resolves once each of `ds` has looked at every webhook's due deliveries again (a look of its
   * own, as its poll would make) and gone quiet: whatever it would send is on the wire by then.
   */
  const looked = (...ds: TestDaemon[]) => Promise.all(ds.map((d) => d.daemon.app.services.get(WEBHOOKS).settled()));

  const quiet = async () => {
    await eventually(async () => ((await a.daemon.app.db.prepare("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending'").get()) as { n: number }).n === 0, 10_000);
  };

  it('events made through both daemons: every delivery is received exactly once', async () => {
    const rx = await receiver();
    const id = await hook(rx.url, ['team:created']);
    const N = 40;
    for (let i = 0; i < N; i++) {
      await emit(i % 2 ? b : a, `shared-${i}`);
      // In bursts of 8, each sent while the next is made.
      if (i % 8 === 7) await rx.waitFor(i - 6, 10_000);
    }
    await rx.waitFor(N, 10_000);
    await quiet();
    const ids = rx.received.map((r) => r.headers['x-service-delivery-id']);
    expect(new Set(ids).size).toBe(N);
    // Each send is a recorded attempt: none was made twice by two daemons holding one delivery.
    const sends = new Map<string, number>();
    for (const x of ids) sends.set(x as string, (sends.get(x as string) ?? 0) + 1);
    const rows = await deliveries(id);
    expect(rows).toHaveLength(N);
    expect(rows.map((r) => [r.id, sends.get(r.id)])).toEqual(rows.map((r) => [r.id, r.attempts]));
    expect(rx.received).toHaveLength(N);
    const names = new Set(rx.received.map((r) => JSON.parse(r.body).data.name));
    expect(names.size).toBe(N);
    expect(rows.every((r) => r.status === 'succeeded' && r.attempts === 1 && r.inFlight === 0)).toBe(true);
    // Nothing more arrives once both have looked again.
    await looked(a, b);
    expect(rx.received).toHaveLength(N);
  });

  it('a delivery no daemon was told of is found by a poll within about a second', async () => {
    const rx = await receiver();
    const id = await hook(rx.url, ['team:created']);
    // Written straight into the table: no daemon's worker is kicked for it, only a poll finds it
    // (as a daemon finds one another daemon made).
    const app = a.daemon.app;
    await app.db
      .prepare(
        "INSERT INTO webhook_deliveries (id, webhook_id, event_id, event, body, status, attempts, next_attempt_at, created_at, updated_at) VALUES (?, ?, 0, 'team:created', '{}', 'pending', 0, ?, ?, ?)",
      )
      .run('00000000-0000-7000-8000-000000000001', id, Date.now(), new Date().toISOString(), new Date().toISOString());
    const t0 = Date.now();
    await rx.waitFor(1, 3_000);
    // Within the shared poll (a second), not only when some daemon happens to be kicked.
    expect(Date.now() - t0).toBeLessThan(1_500);
    await quiet();
    expect(await deliveries(id)).toMatchObject([{ status: 'succeeded', attempts: 1 }]);
  });

  it('retries go on across daemons, one attempt at a time, with one attempt log', async () => {
    const rx = await receiver();
    rx.plan(500, 503);
    const id = await hook(rx.url, ['team:created']);
    await emit(b, 'retried');
    await rx.waitFor(3, 10_000);
    await quiet();
    const [row] = await deliveries(id);
    expect(row).toMatchObject({ status: 'succeeded', attempts: 3 });
    expect(new Set(rx.received.map((r) => r.headers['x-service-delivery-id']))).toEqual(new Set([row!.id]));
    const log = (await b.api('GET', `/v1/webhooks/${id}/deliveries/${row!.id}`)).body.data.attemptLog as { n: number; statusCode: number }[];
    expect(log.map((x) => [x.n, x.statusCode])).toEqual([
      [1, 500],
      [2, 503],
      [3, 200],
    ]);
    await looked(a, b);
    expect(rx.received).toHaveLength(3);
  });

  it('410 Gone through either daemon disables the webhook once and fails what waited', async () => {
    const rx = await receiver();
    rx.fallback = 410;
    const id = await hook(rx.url, ['team:created']);
    const before = await a.daemon.app.events.lastId();
    [a, b, a, b].forEach(async (d, i) => await emit(d, `gone-${i}`));
    await eventually(async () => (await b.api('GET', `/v1/webhooks/${id}`)).body.data.enabled === false, 10_000);
    await quiet();
    expect((await a.api('GET', `/v1/webhooks/${id}`)).body.data.disabledReason).toMatch(/410 Gone/);
    expect((await deliveries(id)).every((r) => r.status === 'failed')).toBe(true);
    const fired = (await a.daemon.app.events.since(before, 100)).filter((e) => e.name === 'webhook:disabled' && e.data.webhookId === id);
    expect(fired).toHaveLength(1);
  });

  it('a URL changed through one daemon: what the other claimed and had not started goes to the new URL', async () => {
    const old = await receiver();
    old.fallback = 'hang';
    const next = await receiver();
    const id = await hook(`${old.url}/old`, ['team:created']);
    // 20 deliveries: A's slots (8) hang on the old URL, and what A and B claimed beyond them waits.
    await a.daemon.app.events.write(async () => {
      for (let i = 0; i < 20; i++) a.daemon.app.events.emit('team:created', { name: `moved-${i}` });
    });
    await old.waitFor(8, 3_000);
    // A holds what it claimed beyond its 8 slots, waiting for them.
    await looked(a);
    expect((await b.api('PATCH', `/v1/webhooks/${id}`, { body: { url: `${next.url}/new` } })).status).toBe(200);
    const sentOld = old.received.length;
    // Both daemons look again (as a poll would) before the hanging attempts end and free the slots.
    await looked(a, b);
    old.dropHanging();
    await eventually(() => new Set(next.received.map((r) => JSON.parse(r.body).data.name)).size === 20, 10_000);
    expect(next.received.every((r) => r.path === '/new')).toBe(true);
    expect(old.received).toHaveLength(sentOld);
    await quiet();
  });

  it('a claim whose daemon stopped is sent by another once its lease runs out, and not before', async () => {
    const rx = await receiver();
    const id = await hook(rx.url, ['team:created']);
    const app = b.daemon.app;
    // The claim of a daemon that died mid-delivery: in flight, its lease running an hour for now.
    const claim = async (until: number) => await app.db.prepare("UPDATE webhook_deliveries SET in_flight = 1, claimed_until = ? WHERE webhook_id = ? AND status = 'pending'").run(until, id);
    await app.events.write(async () => {
      app.events.emit('team:created', { name: 'orphaned' });
      await claim(Date.now() + 3_600_000);
    });
    // A daemon starting meanwhile leaves a live claim alone (it may be another daemon's, mid-send).
    const c = await start();
    cleanups.push(() => c.close());
    expect(await deliveries(id)).toMatchObject([{ status: 'pending', inFlight: 1 }]);
    // Now its lease runs out in 300 ms.
    const until = Date.now() + 300;
    await claim(until);
    // Released within a poll after it expires (not before: it is sent no earlier than the claim's
    // end), and sent once.
    await rx.waitFor(1, 5_000);
    expect(rx.received[0]!.at).toBeGreaterThanOrEqual(until);
    expect(rx.received[0]!.at - until).toBeLessThan(1_500);
    await quiet();
    expect(await deliveries(id)).toMatchObject([{ status: 'succeeded', attempts: 1, inFlight: 0 }]);
    await looked(a, b, c);
    expect(rx.received).toHaveLength(1);
  });

  it('an attempt recorded after its claim expired and the delivery was taken again does not overwrite the newer record', async () => {
    const rx = await receiver();
    const id = await hook(rx.url, ['team:created']);
    const app = a.daemon.app;
    const db = app.db;
    const far = Date.now() + 3_600_000;
    await app.events.write(async () => {
      app.events.emit('team:created', { name: 'raced' });
      await db.prepare("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE webhook_id = ? AND status = 'pending'").run(far, id);
    });
    // Two daemons' claims of one delivery: the first one's lease ran out, the second took it again.
    const [first] = await db.transaction(async () => await store.claimDue(db, id, far, 1, far + 10));
    expect(first).toBeDefined();
    expect(await db.transaction(async () => await store.releaseExpiredClaims(db, far + 11))).toBe(1);
    const [second] = await db.transaction(async () => await store.claimDue(db, id, far + 11, 1, far + 10_000));
    expect(second?.id).toBe(first!.id);
    const attempt = (n: number, statusCode: number) => ({ n, at: new Date().toISOString(), statusCode, error: null, durationMs: 5, responseBody: null });
    // The second daemon records first (succeeded); the first's late answer must not replace it.
    expect(await db.transaction(async () => await store.recordAttempt(db, first!.id, attempt(1, 200), { status: 'succeeded', nextAttemptAt: null, now: new Date().toISOString() }))).toBe(true);
    expect(await db.transaction(async () => await store.recordAttempt(db, first!.id, attempt(1, 500), { status: 'pending', nextAttemptAt: far, now: new Date().toISOString() }))).toBe(false);
    expect(await deliveries(id)).toMatchObject([{ status: 'succeeded', attempts: 1, inFlight: 0 }]);
    expect((await store.listAttempts(db, first!.id)).map((x) => x.statusCode)).toEqual([200]);
    // Giving back the first claim is refused too: the delivery is no longer that claim's.
    await db.transaction(async () => await store.releaseClaims(db, [first!]));
    expect(rx.received).toHaveLength(0);
  });
  // Last: it stops whichever daemon took the delivery, and the survivors go on as `a` and `b`.
  it('a daemon stopped while its receiver hangs gives the claim back: another sends it within a poll', async () => {
    const rx = await receiver();
    rx.plan('hang');
    const id = await hook(rx.url, ['team:created']);
    const c = await start();
    await emit(c, 'hung');
    await rx.waitFor(1, 3_000);
    // C's own kick usually takes it, but a poll of A or B may win: stop the one that has it on the wire.
    const onWire = (d: TestDaemon) => (d.daemon.app.services.get(WEBHOOKS) as unknown as { active: Map<string, number> }).active.has(id);
    const all = [a, b, c];
    const owner = all.find(onWire)!;
    expect(owner).toBeDefined();
    expect(all.filter(onWire)).toHaveLength(1);
    const stoppedAt = Date.now();
    await owner.close();
    [a, b] = all.filter((d) => d !== owner) as [TestDaemon, TestDaemon];
    // Cut short by the shutdown, well before its timeout: not an attempt, and not left claimed
    // until the lease runs out either.
    await rx.waitFor(2, 3_000);
    expect(rx.received[1]!.headers['x-service-delivery-id']).toBe(rx.received[0]!.headers['x-service-delivery-id']);
    expect(Date.now() - stoppedAt).toBeLessThan(2_200);
    await quiet();
    expect(await deliveries(id)).toMatchObject([{ status: 'succeeded', attempts: 1, inFlight: 0 }]);
  });
});
