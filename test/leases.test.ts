import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LEASE_REAPER } from '../src/resources/tasks/lease-reaper.js';
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
afterEach(() => {
  vi.useRealTimers();
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
    { name: 'heartbeat with the lease extends it, no event', method: 'POST', path: () => `/api/v1/tasks/${ids.A}/heartbeat`, body: () => ({ leaseId: leases.A }), status: 200, dataMatches: { agent: 'ana' }, events: [] },
    { name: 'heartbeat with another lease id is 409', method: 'POST', path: () => `/api/v1/tasks/${ids.A}/heartbeat`, body: { leaseId: 'someone-elses' }, status: 409, code: 'conflict', message: /not the current lease/, events: [] },
    { name: 'heartbeat needs a leaseId', method: 'POST', path: () => `/api/v1/tasks/${ids.A}/heartbeat`, body: {}, status: 400, code: 'invalid_request', detailPath: 'body.leaseId', events: [] },
    { name: 'heartbeat on an unknown task is 404', method: 'POST', path: '/api/v1/tasks/nope/heartbeat', body: { leaseId: 'x' }, status: 404, code: 'not_found', events: [] },
    { name: 'transition with a stale leaseId is 409 and moves nothing', method: 'POST', path: () => `/api/v1/tasks/${ids.A}/transition`, body: { to: 'review', leaseId: 'stale' }, status: 409, code: 'conflict', events: [] },
    {
      name: 'transition by the holder with its lease ends the lease',
      method: 'POST',
      path: () => `/api/v1/tasks/${ids.A}/transition`,
      body: () => ({ to: 'review', leaseId: leases.A }),
      status: 200,
      dataMatches: { status: 'review', leaseExpiresAt: null },
      events: () => [{ name: 'task:transition', data: { taskId: ids.A, from: 'in_progress', to: 'review' } }],
    },
    { name: 'a heartbeat after the lease ended is 409', method: 'POST', path: () => `/api/v1/tasks/${ids.A}/heartbeat`, body: () => ({ leaseId: leases.A }), status: 409, code: 'conflict', events: [] },
    { name: 'next for an unknown agent is 422', method: 'POST', path: '/api/v1/tasks/next', body: { agent: 'ghost' }, status: 422, code: 'unprocessable', detailPath: 'body.agent', events: [] },
    { name: 'a comment on a task', method: 'POST', path: () => `/api/v1/tasks/${ids.A}/comments`, body: { body: 'looks good', author: 'bob' }, status: 201, dataMatches: { author: 'bob', body: 'looks good' }, events: () => [{ name: 'task:commented', data: expect.objectContaining({ taskId: ids.A, author: 'bob' }) as never }] },
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
    const mark = d.daemon.app.events.lastId();
    const res = await d.api('POST', '/api/v1/tasks/next', { body: { agent: 'ana' } });
    expect(res.body.data.task).toMatchObject({ id: free, assignTo: 'ana' });
    // Only the free task moved: the refused candidates left no events and no assignee behind.
    expect(new Set(d.daemon.app.events.since(mark, 100).map((e) => e.data.taskId))).toEqual(new Set([free]));
    const held = (await d.api('GET', `/api/v1/tasks?missionId=${mission.id}&limit=200`)).body.data;
    expect(held.every((t: { status: string; assignTo: string | null }) => t.status === 'pending' && t.assignTo === null)).toBe(true);
  });
});

describe('lease expiry (fake clock)', () => {
  it('frees the task, emits task:transition and task:lease_expired, and lets another agent claim it', async () => {
    const id = await newTask('abandoned');
    const sse = await collect(d.url, { key: d.key, filter: 'task:transition,task:lease_expired' });
    vi.useFakeTimers({ toFake: ['Date'] });
    const c = await claim(id, 'ana');
    const reaper = d.daemon.app.services.get(LEASE_REAPER);
    const mark = d.daemon.app.events.lastId();

    // Just before the end nothing happens; a heartbeat then still works and moves the end.
    vi.setSystemTime(Date.parse(c.leaseExpiresAt) - 1000);
    reaper.tick();
    expect(d.daemon.app.events.lastId()).toBe(mark);
    const beat = await d.api('POST', `/api/v1/tasks/${id}/heartbeat`, { body: { leaseId: c.leaseId } });
    expect(beat.status).toBe(200);
    expect(Date.parse(beat.body.data.leaseExpiresAt)).toBe(Date.now() + LEASE_SECONDS * 1000);

    vi.setSystemTime(Date.parse(beat.body.data.leaseExpiresAt) + 1);
    // Past its end, the lease is dead even before the reaper runs.
    expect((await d.api('POST', `/api/v1/tasks/${id}/heartbeat`, { body: { leaseId: c.leaseId } })).body.code).toBe('conflict');
    reaper.tick();

    // (Leases of earlier tests ran out too; this one's events are checked.)
    const fired = d.daemon.app.events
      .since(mark, 100)
      .filter((e) => e.data.taskId === id)
      .map((e) => ({ name: e.name, data: e.data }));
    expect(fired).toEqual([
      { name: 'task:transition', data: { taskId: id, from: 'in_progress', to: 'pending', reason: 'lease expired' } },
      { name: 'task:lease_expired', data: { taskId: id, agent: 'ana', leaseId: c.leaseId, expiredAt: beat.body.data.leaseExpiresAt } },
    ]);
    expect(await task(id)).toMatchObject({ status: 'pending', assignTo: null, leaseExpiresAt: null });
    const ours = () => sse.messages.filter((m) => JSON.parse(m.data).taskId === id);
    await sse.until(() => ours().some((m) => m.event === 'task:lease_expired'));
    expect(ours().map((m) => [m.event, JSON.parse(m.data).to ?? null])).toEqual([
      ['task:transition', 'assigned'],
      ['task:transition', 'in_progress'],
      ['task:transition', 'pending'],
      ['task:lease_expired', null],
    ]);
    sse.close();

    // The old holder's lease is gone for good; another agent takes the task.
    expect((await d.api('POST', `/api/v1/tasks/${id}/transition`, { body: { to: 'review', leaseId: c.leaseId } })).status).toBe(409);
    expect(await claim(id, 'bob')).toMatchObject({ status: 'in_progress', assignTo: 'bob' });
    // A second tick finds nothing more to do.
    const after = d.daemon.app.events.lastId();
    reaper.tick();
    expect(d.daemon.app.events.lastId()).toBe(after);
  });
});

describe('lease expiry across a restart', () => {
  it('a lease that ran out while the daemon was down is released at start', async () => {
    const first = await startTestDaemon({ keepRoot: true, config: { tasks: { leaseSeconds: LEASE_SECONDS } } });
    await first.api('POST', '/api/v1/agents', { body: { name: 'ana' } });
    const id = (await first.api('POST', '/api/v1/tasks', { body: { title: 'survives' } })).body.data.id;
    const c = (await first.api('POST', `/api/v1/tasks/${id}/claim`, { body: { agent: 'ana' } })).body.data;
    const mark = first.daemon.app.events.lastId();
    await first.close();

    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.parse(c.leaseExpiresAt) + 60_000);
    const second = await startTestDaemon({ root: first.root, config: { tasks: { leaseSeconds: LEASE_SECONDS } } });
    try {
      // Released before the daemon listened: the events are already in the log.
      const fired = second.daemon.app.events.since(mark, 100).map((e) => e.name);
      expect(fired).toEqual(['task:transition', 'task:lease_expired']);
      expect((await second.api('GET', `/api/v1/tasks/${id}`)).body.data).toMatchObject({ status: 'pending', assignTo: null });
    } finally {
      await second.close();
    }
  });
});
