import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from '../src/db/sqlite.js';
import { isPostgres } from '../src/db/open.js';
import { IDEMPOTENCY_DDL, IDEMPOTENCY_TTL_MS, remember, replayOf } from '../src/resources/data/idempotency.js';
import * as runs from '../src/resources/runs/store.js';
import { PRESENCE_STALE_MS, presentDaemons } from '../src/resources/system/presence.js';
import * as webhooks from '../src/resources/webhooks/store.js';
import { FakeClock } from './fake-clock.js';
import { rawRequest, startTestDaemon, type TestDaemon } from './harness.js';

// The one rule for the end of every lease, timeout, key and session (docs/tasks.md, "When a lease
// ends"): one that ends at T is held at T - 1 ms and has ended at T, and at T + 1 ms. Each case puts
// the daemon's fake clock (or the time a store is given) at those three instants. clock.skip moves
// the time without firing the timers, as a busy event loop would run them late: what a request
// meets at the instant is the rule, not the timer; clock.pass(0) then runs the late timers (and waits for what they do).

const LEASE_SECONDS = 60;
const OFFSETS = [
  { at: 'T - 1 ms', off: -1, held: true },
  { at: 'T', off: 0, held: false },
  { at: 'T + 1 ms', off: 1, held: false },
];

const clock = new FakeClock(Date.parse('2033-05-06T07:08:09.000Z'));
let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon({ clock, config: { tasks: { leaseSeconds: LEASE_SECONDS } } });
  expect((await d.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
});
afterAll(async () => {
  await d?.close();
});

const post = async (path: string, body: unknown) => {
  const r = await d.api('POST', path, { body });
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body.data;
};
/** Puts the clock at `t` without running the timers due by then. */
const skipTo = (t: number) => clock.skip(t - clock.now());

describe.each(OFFSETS)('at $at, a lease that ends at T', ({ off, held }) => {
  it(`task lease: ${held ? 'held (heartbeat 200, not released)' : 'ended (heartbeat 409, released)'}`, async () => {
    // Two tasks claimed at one instant: one is asked for a heartbeat, the other left to the reaper.
    const [asked, left] = [await post('/api/v1/tasks', { title: `asked ${off}` }), await post('/api/v1/tasks', { title: `left ${off}` })];
    const a = await post(`/api/v1/tasks/${asked.id}/claim`, { agent: 'ana' });
    const b = await post(`/api/v1/tasks/${left.id}/claim`, { agent: 'ana' });
    expect(b.leaseExpiresAt).toBe(a.leaseExpiresAt);
    const end = Date.parse(a.leaseExpiresAt);
    skipTo(end + off);

    const beat = await d.api('POST', `/api/v1/tasks/${asked.id}/heartbeat`, { body: { leaseId: a.leaseId } });
    if (held) expect(beat.status).toBe(200);
    else expect(beat.body).toMatchObject({ code: 'conflict', error: expect.stringContaining(`expired at ${a.leaseExpiresAt}`) });

    const mark = await d.daemon.app.events.lastId();
    await clock.pass(0);
    const released = (await d.daemon.app.events.since(mark, 100)).filter((e) => e.name === 'task:lease_expired' && e.data.taskId === left.id);
    expect(released.map((e) => e.data.expiredAt)).toEqual(held ? [] : [a.leaseExpiresAt]);
    expect((await d.api('GET', `/api/v1/tasks/${left.id}`)).body.data.status).toBe(held ? 'in_progress' : 'pending');
  });

  it(`approval expiresAt: ${held ? 'a person decides it; the timer does not' : 'the timeout decides it, before a person whose answer comes too late (409)'}`, async () => {
    // Two requests made at one instant: one is answered by a person, the other left to the timer.
    const answered = await post('/api/v1/approvals', { requestedBy: 'ana', title: `answered ${off}`, timeoutSeconds: 30 });
    const left = await post('/api/v1/approvals', { requestedBy: 'ana', title: `left ${off}`, timeoutSeconds: 30 });
    expect(left.expiresAt).toBe(answered.expiresAt);
    skipTo(Date.parse(answered.expiresAt) + off);

    const yes = await d.api('POST', `/api/v1/approvals/${answered.id}/approve`, { body: { resolvedBy: 'lead' } });
    if (held) {
      expect(yes.status).toBe(200);
      expect(yes.body.data).toMatchObject({ status: 'approved', resolvedBy: 'lead', timedOut: false });
    } else {
      expect(yes.body).toMatchObject({ code: 'conflict', error: expect.stringContaining('already rejected by timeout') });
      expect((await d.api('GET', `/api/v1/approvals/${answered.id}`)).body.data).toMatchObject({ status: 'rejected', timedOut: true });
    }
    await clock.pass(0);
    expect((await d.api('GET', `/api/v1/approvals/${left.id}`)).body.data).toMatchObject(held ? { status: 'pending' } : { status: 'rejected', timedOut: true });
  });

  it(`board login link and session: ${held ? 'still good' : 'refused'}`, async () => {
    const link = await post('/api/v1/board/logins', {});
    skipTo(Date.parse(link.expiresAt) + off);
    const res = await rawRequest(d.url, { path: link.path });
    expect(res.status).toBe(held ? 303 : 401);
    if (!held) expect(res.body).toContain('This login link has expired');

    // A session of its own, made now: it ends 12 h later.
    const fresh = await post('/api/v1/board/logins', {});
    const signedIn = await rawRequest(d.url, { path: fresh.path });
    const cookie = String(signedIn.headers['set-cookie']).split(';')[0]!;
    const csrf = /csrf=([\w-]+)/.exec(String(signedIn.headers.location))![1]!;
    const maxAge = Number(/Max-Age=(\d+)/.exec(String(signedIn.headers['set-cookie']))![1]);
    skipTo(clock.now() + maxAge * 1000 + off);
    const read = await rawRequest(d.url, { path: '/api/v1/tasks?limit=1', headers: { cookie, 'x-csrf-token': csrf } });
    expect(read.status).toBe(held ? 200 : 401);
  });

  it(`idempotency key (kept ${IDEMPOTENCY_TTL_MS / 3_600_000} h): ${held ? 'replayed' : 'forgotten'}`, () => {
    const db = new Database(':memory:');
    try {
      db.exec(IDEMPOTENCY_DDL);
      const ref = { owner: 'k', key: 'once', hash: 'h' };
      const made = clock.now();
      db.transaction(() => remember(db, ref, { n: 1 }, made))();
      expect(db.transaction(() => replayOf(db, ref, made + IDEMPOTENCY_TTL_MS + off))()).toEqual(held ? { n: 1 } : undefined);
    } finally {
      db.close();
    }
  });

  it(`runner presence (runner.offlineAfterSec after its last write): ${held ? 'online, not taken over' : 'gone, its runs taken over'}`, async () => {
    // Wall-clock times (runs/runner.ts), so the store is given them; a real now keeps the daemon's
    // own runner, which compares with Date.now(), from taking this one over meanwhile.
    const { db } = d.daemon.app;
    const seen = Date.now();
    const id = `edge-runner${off}`;
    await runs.upsertRunner(db, { id, host: 'h', pid: 1, labels: '[]', runtimes: '[]', capacity: 1, running: 0, started_at: new Date(seen).toISOString(), seen_at: seen });
    try {
      const silentMs = d.daemon.app.config().runner.offlineAfterSec * 1000;
      const now = seen + silentMs + off;
      expect((await runs.silentRunners(db, now - silentMs, 'self')).some((r) => r.id === id)).toBe(!held);
    } finally {
      await runs.stopRunner(db, id, new Date().toISOString());
    }
  });

  it(`daemon presence on a shared state (${PRESENCE_STALE_MS / 1000} s after its last write): ${held ? 'present' : 'gone'}`, async () => {
    const { db } = d.daemon.app;
    const seen = Date.now();
    const id = `edge-daemon${off}`;
    await db
      .prepare('INSERT INTO daemons (id, url, hostname, pid, version, keys, started_at, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(id, 'http://x', 'h', 1, '0', '', new Date(seen).toISOString(), seen);
    try {
      expect((await presentDaemons({ db }, seen + PRESENCE_STALE_MS + off)).some((p) => p.id === id)).toBe(held);
    } finally {
      await db.prepare('DELETE FROM daemons WHERE id = ?').run(id);
    }
  });

  it(`webhook secret retired with a grace: ${held ? 'still signs' : 'no longer signs'}`, async () => {
    const hook = await post('/v1/webhooks', { url: 'http://127.0.0.1:9/edge', events: ['team:created'] });
    try {
      const rotatedAt = clock.now();
      await post(`/v1/webhooks/${hook.id}/rotate-secret`, { graceSeconds: 60 });
      const at = new Date(rotatedAt + 60_000 + off).toISOString();
      expect(await webhooks.liveSecrets(d.daemon.app.db, hook.id, at)).toHaveLength(held ? 2 : 1);
    } finally {
      expect((await d.api('DELETE', `/v1/webhooks/${hook.id}`)).status).toBe(200);
    }
  });

  // A delivery's claim is leased only on a shared state (on SQLite the daemon is alone).
  it.runIf(process.env.SVC_TEST_STATE === 'postgres')(`webhook delivery claim: ${held ? 'kept by its daemon' : 'given back for another to send'}`, async () => {
    const { app } = d.daemon;
    expect(isPostgres(app.db)).toBe(true);
    const hook = await post('/v1/webhooks', { url: 'http://127.0.0.1:9/edge', events: ['team:created'] });
    try {
      // Due a year from now: the daemon's own worker leaves it to this test.
      const due = clock.now() + 365 * 86_400_000;
      await app.events.write(async () => {
        app.events.emit('team:created', { name: `edge-${off}` });
        await app.db.prepare("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE webhook_id = ? AND status = 'pending'").run(due, hook.id);
      });
      const until = due + 10_000;
      const claim = async () => expect(await app.db.transaction(async () => await webhooks.claimDue(app.db, hook.id, due, 1, until))).toHaveLength(1);
      await claim();
      // What a poll looks for and gives back at that instant.
      expect(await webhooks.hasExpiredClaims(app.db, until + off)).toBe(!held);
      expect(await app.db.transaction(async () => await webhooks.releaseExpiredClaims(app.db, until + off))).toBe(held ? 0 : 1);
      // What a daemon starting at that instant gives back.
      if (!held) await claim();
      expect(await app.db.transaction(async () => await webhooks.releaseInFlight(app.db, until + off))).toBe(held ? 0 : 1);
    } finally {
      expect((await d.api('DELETE', `/v1/webhooks/${hook.id}`)).status).toBe(200);
    }
  });
});
