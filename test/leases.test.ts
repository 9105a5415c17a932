import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from './fake-clock.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { runCase, type ApiCase } from './scenarios.js';
import { collect } from './sse-collector.js';

// Claims are leases: a claim answers leaseId and leaseExpiresAt; heartbeats extend it; a lease
// that runs out releases the task (task:transition + task:lease_expired, one transaction), also
// when it ran out while the daemon was down.

const LEASE_SECONDS = 60;
let d: TestDaemon;

beforeAll(async () => {
  d = await startTestDaemon({ config: { tasks: { leaseSeconds: LEASE_SECONDS } } });
  for (const name of ['ana', 'bob']) expect((await d.api('POST', '/api/v1/agents', { body: { name } })).status).toBe(201);
});
afterAll(async () => {
  await d.close();
});

async function newTask(title: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await d.api('POST', '/api/v1/tasks', { body: { title, ...extra } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.id;
}

async function claim(id: string, agent: string): Promise<{ leaseId: string; leaseExpiresAt: string; status: string; assignTo: string }> {
  const res = await d.api('POST', `/api/v1/tasks/${id}/claim`, { body: { agent } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

const task = async (id: string) => (await d.api('GET', `/api/v1/tasks/${id}`)).body.data;

describe('claims answer a lease', () => {
  it('claim returns leaseId and leaseExpiresAt tasks.leaseSeconds ahead; the task shows the expiry', async () => {
    const id = await newTask('leased');
    const before = Date.now();
    const c = await claim(id, 'ana');
    expect(c.leaseId).toMatch(/^[0-9a-f-]{36}$/);
    const ahead = Date.parse(c.leaseExpiresAt) - before;
    expect(ahead).toBeGreaterThanOrEqual(LEASE_SECONDS * 1000 - 5);
    expect(ahead).toBeLessThanOrEqual(LEASE_SECONDS * 1000 + 5000);
    expect(await task(id)).toMatchObject({ status: 'in_progress', assignTo: 'ana', leaseExpiresAt: c.leaseExpiresAt });
    expect((await task(id)).leaseId).toBeUndefined();
  });

  const ids: Record<string, string> = {};
  const leases: Record<string, string> = {};
  const cases: ApiCase[] = [
    {
      name: 'heartbeat with the lease extends it, no event',
      method: 'POST',
      path: () => `/api/v1/tasks/${ids.A}/heartbeat`,
      body: () => ({ leaseId: leases.A }),
      status: 200,
      dataMatches: { agent: 'ana' },
      events: [],
    },
    {
      name: 'heartbeat with another lease id is 409',
      method: 'POST',
      path: () => `/api/v1/tasks/${ids.A}/heartbeat`,
      body: { leaseId: 'someone-elses' },
      status: 409,
      code: 'conflict',
      message: /not the current lease/,
      events: [],
    },
    { name: 'heartbeat needs a leaseId', method: 'POST', path: () => `/api/v1/tasks/${ids.A}/heartbeat`, body: {}, status: 400, code: 'invalid_request', detailPath: 'body.leaseId', events: [] },
    { name: 'heartbeat on an unknown task is 404', method: 'POST', path: '/api/v1/tasks/nope/heartbeat', body: { leaseId: 'x' }, status: 404, code: 'not_found', events: [] },
    {
      name: 'transition with a stale leaseId is 409 and moves nothing',
      method: 'POST',
      path: () => `/api/v1/tasks/${ids.A}/transition`,
      body: { to: 'review', leaseId: 'stale' },
      status: 409,
      code: 'conflict',
      events: [],
    },
    {
      name: 'transition by the holder with its lease ends the lease',
      method: 'POST',
      path: () => `/api/v1/tasks/${ids.A}/transition`,
      body: () => ({ to: 'review', leaseId: leases.A }),
      status: 200,
      dataMatches: { status: 'review', leaseExpiresAt: null },
      events: () => [{ name: 'task:transition', data: { taskId: ids.A, from: 'in_progress', to: 'review' } }],
    },
    {
      name: 'a heartbeat after the lease ended is 409',
      method: 'POST',
      path: () => `/api/v1/tasks/${ids.A}/heartbeat`,
      body: () => ({ leaseId: leases.A }),
      status: 409,
      code: 'conflict',
      events: [],
    },
    { name: 'next for an unknown agent is 422', method: 'POST', path: '/api/v1/tasks/next', body: { agent: 'ghost' }, status: 422, code: 'unprocessable', detailPath: 'body.agent', events: [] },
    {
      name: 'a comment on a task',
      method: 'POST',
      path: () => `/api/v1/tasks/${ids.A}/comments`,
      body: { body: 'looks good', author: 'bob' },
      status: 201,
      dataMatches: { author: 'bob', body: 'looks good' },
      events: () => [{ name: 'task:commented', data: expect.objectContaining({ taskId: ids.A, author: 'bob' }) as never }],
    },
    { name: 'a comment by default is signed with the key name', method: 'POST', path: () => `/api/v1/tasks/${ids.A}/comments`, body: { body: 'noted' }, status: 201, dataMatches: { author: 'local' } },
    { name: 'an empty comment is 400', method: 'POST', path: () => `/api/v1/tasks/${ids.A}/comments`, body: { body: '  ' }, status: 400, code: 'invalid_request', detailPath: 'body.body', events: [] },
    { name: 'a comment on an unknown task is 404', method: 'POST', path: '/api/v1/tasks/nope/comments', body: { body: 'x' }, status: 404, code: 'not_found', events: [] },
  ];
  beforeAll(async () => {
    ids.A = await newTask('A');
    leases.A = (await claim(ids.A, 'ana')).leaseId;
  });
  it.each(cases)('$name', async (c) => {
    await runCase(d, c);
  });
  it('comments list newest first', async () => {
    const res = await d.api('GET', `/api/v1/tasks/${ids.A}/comments?limit=1`);
    expect(res.body.data.map((c: { body: string }) => c.body)).toEqual(['noted']);
    const next = await d.api('GET', `/api/v1/tasks/${ids.A}/comments?cursor=${res.headers.get('x-next-cursor')}`);
    expect(next.body.data.map((c: { body: string }) => c.body)).toEqual(['looks good']);
  });
});

describe('POST /api/v1/tasks/next', () => {
  it('claims the most urgent, then oldest, ready task the agent may take; null when none', async () => {
    // Clear the board of claimable work first.
    for (const status of ['pending', 'assigned']) {
      for (const t of (await d.api('GET', `/api/v1/tasks?status=${status}&limit=200`)).body.data) await d.api('DELETE', `/api/v1/tasks/${t.id}`);
    }
    const old = await newTask('old normal');
    const blocker = await newTask('blocker', { priority: 'low' });
    await newTask('blocked urgent', { priority: 'urgent', dependsOn: [blocker] });
    await newTask('bobs', { priority: 'urgent', assignTo: 'bob' });
    const high = await newTask('new high', { priority: 'high' });
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await d.api('POST', '/api/v1/tasks/next', { body: { agent: 'ana' } });
      expect(res.status).toBe(200);
      order.push(res.body.data.task?.id ?? null);
    }
    expect(order).toEqual([high, old, blocker]);
    const none = await d.api('POST', '/api/v1/tasks/next', { body: { agent: 'ana' } });
    expect(none.body.data).toEqual({ task: null });
  });

  it('skips candidates another rule refuses, past the first batch, and changes nothing for them', async () => {
    const tasks = Array.from({ length: 25 }, (_, i) => ({ title: `paused ${i}` }));
    const mission = (await d.api('POST', '/api/v1/missions', { body: { name: 'on hold', tasks } })).body.data;
    expect((await d.api('POST', `/api/v1/missions/${mission.id}/start`)).status).toBe(200);
    expect((await d.api('POST', `/api/v1/missions/${mission.id}/pause`)).status).toBe(200);
    const free = await newTask('free');
    const mark = await d.daemon.app.events.lastId();
    const res = await d.api('POST', '/api/v1/tasks/next', { body: { agent: 'ana' } });
    expect(res.body.data.task).toMatchObject({ id: free, assignTo: 'ana' });
    // Only the free task moved: the refused candidates left no events and no assignee behind.
    expect(new Set((await d.daemon.app.events.since(mark, 100)).map((e) => e.data.taskId))).toEqual(new Set([free]));
    const held = (await d.api('GET', `/api/v1/tasks?missionId=${mission.id}&limit=200`)).body.data;
    expect(held.every((t: { status: string; assignTo: string | null }) => t.status === 'pending' && t.assignTo === null)).toBe(true);
  });
});

/**
 * A daemon of its own on a fake clock years away from the real one: no lease of another test can
 * run out inside its steps, every wake-up of the reaper is the clock's, and a time that came from
 * the system clock instead of the daemon's would be years off.
 */
async function fakeClockDaemon(clock: FakeClock, root?: string): Promise<TestDaemon> {
  const daemon = await startTestDaemon({ clock, root, keepRoot: true, config: { tasks: { leaseSeconds: LEASE_SECONDS } } });
  if (!root) for (const name of ['ana', 'bob']) expect((await daemon.api('POST', '/api/v1/agents', { body: { name } })).status).toBe(201);
  return daemon;
}

describe('lease expiry (fake clock)', () => {
  const clock = new FakeClock(Date.parse('2031-03-04T05:06:07.000Z'));
  let f: TestDaemon;
  beforeAll(async () => {
    f = await fakeClockDaemon(clock);
  });
  afterAll(async () => {
    await f.close();
  });
  const iso = () => new Date(clock.now()).toISOString();

  it('frees the task, emits task:transition and task:lease_expired, and lets another agent claim it', async () => {
    const id = (await f.api('POST', '/api/v1/tasks', { body: { title: 'abandoned' } })).body.data.id;
    const sse = await collect(f.url, { key: f.key, filter: 'task:transition,task:lease_expired' });
    const c = (await f.api('POST', `/api/v1/tasks/${id}/claim`, { body: { agent: 'ana' } })).body.data;
    expect(c.leaseExpiresAt).toBe(new Date(clock.now() + LEASE_SECONDS * 1000).toISOString());
    // The reaper's one wake-up is set on the daemon's clock, for this lease's end (once its read of
    // the leases is back: pass(0) waits for that, and moves no time).
    await clock.pass(0);
    expect(clock.nextAt).toBe(Date.parse(c.leaseExpiresAt));
    const mark = await f.daemon.app.events.lastId();

    // Just before the end nothing happens; a heartbeat then still works and moves the end.
    await clock.passTo(Date.parse(c.leaseExpiresAt) - 1000);
    expect(await f.daemon.app.events.lastId()).toBe(mark);
    const beat = await f.api('POST', `/api/v1/tasks/${id}/heartbeat`, { body: { leaseId: c.leaseId } });
    expect(beat.status).toBe(200);
    expect(beat.body.data.leaseExpiresAt).toBe(new Date(clock.now() + LEASE_SECONDS * 1000).toISOString());
    // The wake-up set for the old end finds nothing due and sleeps until the new one.
    await clock.passTo(Date.parse(c.leaseExpiresAt));
    expect(await f.daemon.app.events.lastId()).toBe(mark);
    expect(clock.nextAt).toBe(Date.parse(beat.body.data.leaseExpiresAt));

    // Past its end the lease is dead even before the reaper has run (its timer is late).
    clock.skip(Date.parse(beat.body.data.leaseExpiresAt) + 1 - clock.now());
    expect((await f.api('POST', `/api/v1/tasks/${id}/heartbeat`, { body: { leaseId: c.leaseId } })).body).toMatchObject({ code: 'conflict', error: /expired at/ });
    expect((await f.api('POST', `/api/v1/tasks/${id}/transition`, { body: { to: 'review', leaseId: c.leaseId } })).body).toMatchObject({ code: 'conflict', error: /expired at/ });
    expect(await f.daemon.app.events.lastId()).toBe(mark);
    await clock.pass(0);

    const fired = (await f.daemon.app.events.since(mark, 100)).map((e) => ({ name: e.name, data: e.data }));
    expect(fired).toEqual([
      { name: 'task:transition', data: { taskId: id, from: 'in_progress', to: 'pending', reason: 'lease expired' } },
      { name: 'task:lease_expired', data: { taskId: id, agent: 'ana', leaseId: c.leaseId, expiredAt: beat.body.data.leaseExpiresAt } },
    ]);
    expect((await f.api('GET', `/api/v1/tasks/${id}`)).body.data).toMatchObject({ status: 'pending', assignTo: null, leaseExpiresAt: null, updatedAt: iso() });
    await sse.until(() => sse.messages.some((m) => m.event === 'task:lease_expired'));
    expect(sse.messages.map((m) => [m.event, JSON.parse(m.data).taskId, JSON.parse(m.data).to ?? null])).toEqual([
      ['task:transition', id, 'assigned'],
      ['task:transition', id, 'in_progress'],
      ['task:transition', id, 'pending'],
      ['task:lease_expired', id, null],
    ]);
    sse.close();

    // The old holder's lease is gone for good; another agent takes the task.
    expect((await f.api('POST', `/api/v1/tasks/${id}/transition`, { body: { to: 'review', leaseId: c.leaseId } })).body).toMatchObject({ code: 'conflict', error: /not the current lease/ });
    const again = (await f.api('POST', `/api/v1/tasks/${id}/claim`, { body: { agent: 'bob' } })).body.data;
    expect(again).toMatchObject({ status: 'in_progress', assignTo: 'bob', leaseExpiresAt: new Date(clock.now() + LEASE_SECONDS * 1000).toISOString() });
    // Nothing more is due before bob's lease ends.
    const after = await f.daemon.app.events.lastId();
    await clock.passTo(Date.parse(again.leaseExpiresAt) - 1);
    expect(await f.daemon.app.events.lastId()).toBe(after);
    expect((await f.api('POST', `/api/v1/tasks/${id}/transition`, { body: { to: 'review', leaseId: again.leaseId } })).status).toBe(200);
  });

  it("every time a task, its lease, its comments, its approval and its mission carry is the daemon's clock", async () => {
    const created = iso();
    const task = (await f.api('POST', '/api/v1/tasks', { body: { title: 'timed' } })).body.data;
    expect(task).toMatchObject({ createdAt: created, updatedAt: created });

    await clock.pass(5_000);
    const claimedAt = iso();
    const c = (await f.api('POST', `/api/v1/tasks/${task.id}/claim`, { body: { agent: 'ana' } })).body.data;
    expect(c).toMatchObject({ createdAt: created, updatedAt: claimedAt, leaseExpiresAt: new Date(clock.now() + LEASE_SECONDS * 1000).toISOString() });

    await clock.pass(7_000);
    const beat = (await f.api('POST', `/api/v1/tasks/${task.id}/heartbeat`, { body: { leaseId: c.leaseId } })).body.data;
    expect(beat.leaseExpiresAt).toBe(new Date(clock.now() + LEASE_SECONDS * 1000).toISOString());

    await clock.pass(1_000);
    const comment = (await f.api('POST', `/api/v1/tasks/${task.id}/comments`, { body: { body: 'on it' } })).body.data;
    expect(comment.createdAt).toBe(iso());

    await clock.pass(1_000);
    const patched = (await f.api('PATCH', `/api/v1/tasks/${task.id}`, { body: { priority: 'high' } })).body.data;
    expect(patched.updatedAt).toBe(iso());

    await clock.pass(1_000);
    const review = (await f.api('POST', `/api/v1/tasks/${task.id}/transition`, { body: { to: 'review', leaseId: c.leaseId } })).body.data;
    expect(review).toMatchObject({ status: 'review', updatedAt: iso() });

    await clock.pass(1_000);
    const approval = (await f.api('POST', '/api/v1/approvals', { body: { taskId: task.id, requestedBy: 'ana', title: 'ship?', timeoutSeconds: 30 } })).body.data;
    expect(approval).toMatchObject({ createdAt: iso(), expiresAt: new Date(clock.now() + 30_000).toISOString() });
    expect((await f.api('GET', `/api/v1/tasks/${task.id}`)).body.data.updatedAt).toBe(iso());

    await clock.pass(30_000);
    const decided = (await f.api('GET', `/api/v1/approvals/${approval.id}`)).body.data;
    expect(decided).toMatchObject({ status: 'rejected', timedOut: true, resolvedAt: approval.expiresAt });
    expect((await f.api('GET', `/api/v1/tasks/${task.id}`)).body.data).toMatchObject({ status: 'pending', updatedAt: approval.expiresAt });

    // Removing a task touches the tasks that depended on it.
    const dependent = (await f.api('POST', '/api/v1/tasks', { body: { title: 'after', dependsOn: [task.id] } })).body.data;
    await clock.pass(1_000);
    expect((await f.api('DELETE', `/api/v1/tasks/${task.id}`)).status).toBe(200);
    expect((await f.api('GET', `/api/v1/tasks/${dependent.id}`)).body.data).toMatchObject({ dependsOn: [], updatedAt: iso() });

    // A mission moved by its tasks, and its tasks detached when it goes.
    await clock.pass(1_000);
    const mission = (await f.api('POST', '/api/v1/missions', { body: { name: 'timed', tasks: [{ title: 'only' }] } })).body.data;
    expect(mission).toMatchObject({ createdAt: iso(), updatedAt: iso() });
    const [only] = (await f.api('GET', `/api/v1/tasks?missionId=${mission.id}`)).body.data;
    await clock.pass(1_000);
    expect((await f.api('POST', `/api/v1/missions/${mission.id}/start`)).body.data.updatedAt).toBe(iso());
    for (const to of ['assigned', 'in_progress', 'review']) expect((await f.api('POST', `/api/v1/tasks/${only.id}/transition`, { body: { to } })).status).toBe(200);
    await clock.pass(1_000);
    expect((await f.api('POST', `/api/v1/tasks/${only.id}/transition`, { body: { to: 'done' } })).status).toBe(200);
    expect((await f.api('GET', `/api/v1/missions/${mission.id}`)).body.data).toMatchObject({ status: 'completed', updatedAt: iso() });
    await clock.pass(1_000);
    expect((await f.api('DELETE', `/api/v1/missions/${mission.id}`)).status).toBe(200);
    expect((await f.api('GET', `/api/v1/tasks/${only.id}`)).body.data).toMatchObject({ missionId: null, updatedAt: iso() });
  });
});

describe('lease expiry across a restart', () => {
  it('a lease that ran out while the daemon was down is released at start', async () => {
    const clock = new FakeClock(Date.parse('2032-07-08T09:10:11.000Z'));
    const first = await fakeClockDaemon(clock);
    const id = (await first.api('POST', '/api/v1/tasks', { body: { title: 'survives' } })).body.data.id;
    const c = (await first.api('POST', `/api/v1/tasks/${id}/claim`, { body: { agent: 'ana' } })).body.data;
    const mark = await first.daemon.app.events.lastId();
    await first.close();
    // A closed daemon leaves no wake-up on the clock: nothing fires while it is down.
    expect(clock.pending).toBe(0);

    await clock.passTo(Date.parse(c.leaseExpiresAt) + 60_000);
    const second = await fakeClockDaemon(clock, first.root);
    try {
      // Released before the daemon listened: the events are already in the log.
      // (On a shared state the runner's own stop and start are in the log too: runner:offline, runner:online.)
      const fired = (await second.daemon.app.events.since(mark, 100)).filter((e) => !e.name.startsWith('runner:')).map((e) => [e.name, e.data.taskId]);
      expect(fired).toEqual([
        ['task:transition', id],
        ['task:lease_expired', id],
      ]);
      expect((await second.api('GET', `/api/v1/tasks/${id}`)).body.data).toMatchObject({ status: 'pending', assignTo: null, updatedAt: new Date(clock.now()).toISOString() });
    } finally {
      await second.close();
    }
  });
});
