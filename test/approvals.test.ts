import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from './fake-clock.js';
import { startTestDaemon, until, type TestDaemon } from './harness.js';
import { runCase, type ApiCase } from './scenarios.js';

// Timeouts run on this clock: a test moves it past an expiry and reads the outcome, no sleeps.
const clock = new FakeClock(Date.now());
let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon({ clock });
});
afterAll(async () => {
  await d?.close();
});

const A = '/api/v1/approvals';
const NO_SUCH_ID = '0190f000-0000-7000-8000-000000000000';

/** The moves that bring a new (pending) task to each state. */
const PATH_TO: Record<string, string[]> = {
  pending: [],
  assigned: ['assigned'],
  in_progress: ['assigned', 'in_progress'],
  review: ['assigned', 'in_progress', 'review'],
  done: ['assigned', 'in_progress', 'review', 'done'],
  failed: ['assigned', 'in_progress', 'failed'],
};

async function taskIn(daemon: TestDaemon, status: string, body: Record<string, unknown> = {}): Promise<any> {
  const created = await daemon.api('POST', '/api/v1/tasks', { body: { title: `a ${status} task`, ...body, ...(status === 'draft' ? { draft: true } : {}) } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  let task = created.body.data;
  for (const to of PATH_TO[status] ?? []) {
    const res = await daemon.api('POST', `/api/v1/tasks/${task.id}/transition`, { body: { to } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    task = res.body.data;
  }
  return task;
}

async function request(daemon: TestDaemon, body: Record<string, unknown>): Promise<any> {
  const res = await daemon.api('POST', A, { body: { requestedBy: 'ana', title: 'may I?', ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

async function missionIn(daemon: TestDaemon, name: string): Promise<any> {
  const res = await daemon.api('POST', '/api/v1/missions', { body: { name } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

/**
 * Puts a task where a database from before the awaiting_approval guard could have left it (moved
 * out by hand with its request still pending); no API path leads there any more.
 */
async function legacyMove(daemon: TestDaemon, taskId: string, status: string): Promise<void> {
  await daemon.daemon.app.db.prepare('UPDATE tasks SET status = ? WHERE id = ?').run(status, taskId);
}

const getTask = async (daemon: TestDaemon, id: string) => (await daemon.api('GET', `/api/v1/tasks/${id}`)).body.data;
const getApproval = async (daemon: TestDaemon, id: string) => (await daemon.api('GET', `${A}/${id}`)).body.data;
const eventsOf = async (daemon: TestDaemon, id: string) =>
  (await daemon.daemon.app.events.since(0, 10_000))
    .filter((e) => e.data.approvalId === id || (typeof e.data.reason === 'string' && e.data.reason.includes(id)))
    .map((e) => ({ name: e.name, data: e.data }));

interface Case extends ApiCase {
  save?: string;
  /** Checks after the request (e.g. where the task went). */
  then?: () => Promise<void>;
}

async function run(c: Case, ids: Record<string, string>): Promise<void> {
  await runCase(d, { ...c, onSuccess: (data) => c.save && (ids[c.save] = data.id) });
  await c.then?.();
}

describe('an empty list', () => {
  it.each([A, `${A}?status=pending`, `${A}?status=approved`, `${A}?status=rejected`])('GET %s answers [] (never null)', async (path) => {
    const res = await d.api('GET', path);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, data: [] });
  });
});

describe('requesting', () => {
  const ids: Record<string, string> = {};
  const t: Record<string, any> = {};
  let mission: any;
  beforeAll(async () => {
    for (const s of ['pending', 'done', 'draft', 'in_progress']) t[s] = await taskIn(d, s);
    t.loose = await taskIn(d, 'pending');
    mission = await missionIn(d, 'gated');
  });

  const requested = (key: string, taskId: () => string | null, extra: Record<string, unknown> = {}) => ({
    name: 'approval:requested',
    data: { approvalId: ids[key], kind: 'task', taskId: taskId(), missionId: null, title: 'may I?', requestedBy: 'ana', runId: null, tool: null, ...extra },
  });
  // What a person is told (test/notify.test.ts checks it whole).
  const attention = (key: string, taskId: () => string | null) => ({
    name: 'attention:needed',
    data: expect.objectContaining({ reason: 'approval', approvalId: ids[key], taskId: taskId(), title: 'Approval needed: may I?' }),
  });

  const cases: Case[] = [
    {
      name: 'for a pending task: the task moves to awaiting_approval',
      method: 'POST',
      path: A,
      body: () => ({ taskId: t.pending.id, requestedBy: 'ana', title: 'may I?', reason: 'touches prod', payload: { cmd: 'make deploy', dryRun: false } }),
      status: 201,
      dataMatches: () => ({
        taskId: t.pending.id,
        missionId: null,
        requestedBy: 'ana',
        title: 'may I?',
        reason: 'touches prod',
        payload: { cmd: 'make deploy', dryRun: false },
        status: 'pending',
        timeoutAction: null,
        expiresAt: null,
        taskFrom: 'pending',
        note: null,
        feedback: null,
        resolvedBy: null,
        resolvedAt: null,
        timedOut: false,
      }),
      save: 'P',
      events: () => [
        requested('P', () => t.pending.id),
        attention('P', () => t.pending.id),
        { name: 'task:transition', data: { taskId: t.pending.id, from: 'pending', to: 'awaiting_approval', reason: `approval ${ids.P} requested by ana` } },
      ],
      then: async () => expect((await getTask(d, t.pending.id)).status).toBe('awaiting_approval'),
    },
    {
      name: 'for an in_progress task',
      method: 'POST',
      path: A,
      body: () => ({ taskId: t.in_progress.id, requestedBy: 'ana', title: 'may I?' }),
      status: 201,
      dataMatches: { taskFrom: 'in_progress' },
      save: 'I',
      events: () => [
        requested('I', () => t.in_progress.id),
        attention('I', () => t.in_progress.id),
        { name: 'task:transition', data: { taskId: t.in_progress.id, from: 'in_progress', to: 'awaiting_approval', reason: `approval ${ids.I} requested by ana` } },
      ],
    },
    {
      name: 'without a task, with a mission id',
      method: 'POST',
      path: A,
      body: () => ({ requestedBy: 'ana', title: 'may I?', missionId: mission.id }),
      status: 201,
      dataMatches: () => ({ taskId: null, missionId: mission.id, taskFrom: null, payload: null, reason: null }),
      save: 'N',
      events: () => [requested('N', () => null, { missionId: mission.id }), attention('N', () => null)],
    },
    {
      name: 'an unknown mission',
      method: 'POST',
      path: A,
      body: { requestedBy: 'ana', title: 'x', missionId: 'm-1' },
      status: 422,
      code: 'unprocessable',
      detailPath: 'body.missionId',
      message: /mission "m-1" does not exist/,
      events: [],
    },
    {
      name: 'an unknown mission for a task outside any mission: nothing written, the task stays put',
      method: 'POST',
      path: A,
      body: () => ({ taskId: t.loose.id, requestedBy: 'ana', title: 'x', missionId: NO_SUCH_ID }),
      status: 422,
      code: 'unprocessable',
      detailPath: 'body.missionId',
      events: [],
      then: async () => expect((await getTask(d, t.loose.id)).status).toBe('pending'),
    },
    {
      name: 'a task already awaiting approval cannot be gated twice',
      method: 'POST',
      path: A,
      body: () => ({ taskId: t.pending.id, requestedBy: 'ana', title: 'again?' }),
      status: 409,
      code: 'invalid_transition',
      message: /awaiting_approval/,
      events: [],
    },
    { name: 'a done task', method: 'POST', path: A, body: () => ({ taskId: t.done.id, requestedBy: 'ana', title: 'x' }), status: 409, code: 'invalid_transition', message: /done/, events: [] },
    { name: 'a draft task', method: 'POST', path: A, body: () => ({ taskId: t.draft.id, requestedBy: 'ana', title: 'x' }), status: 409, code: 'invalid_transition', message: /draft/, events: [] },
    { name: 'an unknown task', method: 'POST', path: A, body: { taskId: NO_SUCH_ID, requestedBy: 'ana', title: 'x' }, status: 422, code: 'unprocessable', detailPath: 'body.taskId', events: [] },
    { name: 'requestedBy missing', method: 'POST', path: A, body: { title: 'x' }, status: 400, code: 'invalid_request', detailPath: 'body.requestedBy', events: [] },
    { name: 'blank title', method: 'POST', path: A, body: { requestedBy: 'ana', title: '  ' }, status: 400, code: 'invalid_request', detailPath: 'body.title', events: [] },
    { name: 'unknown property', method: 'POST', path: A, body: { requestedBy: 'ana', title: 'x', urgent: true }, status: 400, code: 'invalid_request', detailPath: 'body.urgent', events: [] },
    {
      name: 'timeoutSeconds 0',
      method: 'POST',
      path: A,
      body: { requestedBy: 'ana', title: 'x', timeoutSeconds: 0 },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.timeoutSeconds',
      events: [],
    },
    {
      name: 'timeoutSeconds not whole',
      method: 'POST',
      path: A,
      body: { requestedBy: 'ana', title: 'x', timeoutSeconds: 1.5 },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.timeoutSeconds',
      events: [],
    },
    {
      name: 'timeoutAction not in the enum',
      method: 'POST',
      path: A,
      body: { requestedBy: 'ana', title: 'x', timeoutSeconds: 5, timeoutAction: 'maybe' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.timeoutAction',
      events: [],
    },
    {
      name: 'timeoutAction without timeoutSeconds',
      method: 'POST',
      path: A,
      body: { requestedBy: 'ana', title: 'x', timeoutAction: 'approve' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.timeoutAction',
      events: [],
    },
    { name: 'no body', method: 'POST', path: A, status: 400, code: 'invalid_request', detailPath: 'body', events: [] },
  ];
  it.each(cases.map((c, i) => [i, c.name, c] as const))('%i %s', async (_i, _n, c) => run(c, ids));

  it('a timeout is persisted as expiresAt, with timeoutAction reject by default', async () => {
    const a = await request(d, { timeoutSeconds: 3600 });
    expect(a.timeoutAction).toBe('reject');
    expect(Date.parse(a.expiresAt) - Date.parse(a.createdAt)).toBe(3_600_000);
    const b = await request(d, { timeoutSeconds: 60, timeoutAction: 'approve' });
    expect(b.timeoutAction).toBe('approve');
    // Not left pending with a timer for the tests that follow.
    for (const x of [a, b]) expect((await d.api('POST', `${A}/${x.id}/reject`, { body: { feedback: 'cleanup' } })).status).toBe(200);
  });

  it('returns every field, with ISO timestamps', async () => {
    const a = await getApproval(d, ids.P!);
    expect(Object.keys(a)).toEqual([
      'id',
      'kind',
      'taskId',
      'missionId',
      'requestedBy',
      'title',
      'reason',
      'payload',
      'status',
      'timeoutAction',
      'expiresAt',
      'taskFrom',
      'note',
      'feedback',
      'resolvedBy',
      'resolvedAt',
      'timedOut',
      'runId',
      'agent',
      'tool',
      'alwaysAllowed',
      'createdAt',
      'updatedAt',
    ]);
    expect(a).toMatchObject({ kind: 'task', runId: null, agent: null, tool: null, alwaysAllowed: null });
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    expect(a.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});

describe('deciding', () => {
  const ids: Record<string, string> = {};
  const t: Record<string, any> = {};
  beforeAll(async () => {
    for (const s of ['pending', 'in_progress', 'review', 'assigned']) {
      t[s] = await taskIn(d, s, { description: s === 'assigned' ? 'build the page' : undefined });
      ids[s] = (await request(d, { taskId: t[s].id, title: `gate ${s}` })).id;
    }
    ids.none = (await request(d, { title: 'no task' })).id;
    ids.nobody = (await request(d, { title: 'no body' })).id;
  });

  const resolved = (key: string, taskId: () => string | null, status: string, resolvedBy: string | null) => ({
    name: 'approval:resolved',
    data: { approvalId: ids[key], kind: 'task', taskId: taskId(), runId: null, status, resolvedBy, timedOut: false, alwaysAllowed: null },
  });
  const moved = (key: string, to: string, verb: string) => ({
    name: 'task:transition',
    data: { taskId: t[key].id, from: 'awaiting_approval', to, reason: `approval ${ids[key]} ${verb}` },
  });
  const taskIs = (key: string, fields: Record<string, unknown>) => async () => expect(await getTask(d, t[key].id)).toMatchObject(fields);

  const cases: Case[] = [
    {
      name: 'approve a request made from pending: task → assigned',
      method: 'POST',
      path: () => `${A}/${ids.pending}/approve`,
      body: { note: 'go ahead', resolvedBy: 'lead' },
      status: 200,
      dataMatches: () => ({ id: ids.pending, status: 'approved', note: 'go ahead', feedback: null, resolvedBy: 'lead', timedOut: false }),
      events: () => [resolved('pending', () => t.pending.id, 'approved', 'lead'), moved('pending', 'assigned', 'approved by lead')],
      then: taskIs('pending', { status: 'assigned', revisionCount: 0 }),
    },
    {
      name: 'approve a request made from in_progress: task → assigned',
      method: 'POST',
      path: () => `${A}/${ids.in_progress}/approve`,
      body: { resolvedBy: 'lead' },
      status: 200,
      dataMatches: { status: 'approved', note: null },
      events: () => [resolved('in_progress', () => t.in_progress.id, 'approved', 'lead'), moved('in_progress', 'assigned', 'approved by lead')],
      then: taskIs('in_progress', { status: 'assigned' }),
    },
    {
      name: 'approve a request made from review: task → done',
      method: 'POST',
      path: () => `${A}/${ids.review}/approve`,
      body: {},
      status: 200,
      // Without resolvedBy, the name of the API key that decided (the harness uses the local key).
      dataMatches: { status: 'approved', resolvedBy: 'local' },
      events: () => [resolved('review', () => t.review.id, 'approved', 'local'), moved('review', 'done', 'approved by local')],
      then: taskIs('review', { status: 'done' }),
    },
    {
      name: 'reject: task → pending, feedback appended, revisionCount + 1',
      method: 'POST',
      path: () => `${A}/${ids.assigned}/reject`,
      body: { feedback: 'Use the staging database.', resolvedBy: 'lead' },
      status: 200,
      dataMatches: { status: 'rejected', feedback: 'Use the staging database.', note: null, resolvedBy: 'lead', timedOut: false },
      events: () => [resolved('assigned', () => t.assigned.id, 'rejected', 'lead'), moved('assigned', 'pending', 'rejected by lead')],
      then: taskIs('assigned', { status: 'pending', revisionCount: 1, description: 'build the page\n\nApproval "gate assigned" rejected by lead: Use the staging database.' }),
    },
    {
      name: 'approve a request without a task: no task moves',
      method: 'POST',
      path: () => `${A}/${ids.none}/approve`,
      body: { resolvedBy: 'lead' },
      status: 200,
      dataMatches: { status: 'approved', taskId: null },
      events: () => [resolved('none', () => null, 'approved', 'lead')],
    },
    {
      name: 'approve with no body at all (every field optional)',
      method: 'POST',
      path: () => `${A}/${ids.nobody}/approve`,
      status: 200,
      dataMatches: () => ({ id: ids.nobody, status: 'approved', note: null, resolvedBy: 'local' }),
      events: () => [resolved('nobody', () => null, 'approved', 'local')],
    },
    { name: 'approve twice', method: 'POST', path: () => `${A}/${ids.pending}/approve`, body: {}, status: 409, code: 'conflict', message: /already approved by lead/, events: [] },
    { name: 'reject after approve', method: 'POST', path: () => `${A}/${ids.pending}/reject`, body: { feedback: 'no' }, status: 409, code: 'conflict', events: [] },
    { name: 'approve after reject', method: 'POST', path: () => `${A}/${ids.assigned}/approve`, body: {}, status: 409, code: 'conflict', message: /already rejected/, events: [] },
    { name: 'reject twice', method: 'POST', path: () => `${A}/${ids.assigned}/reject`, body: { feedback: 'still no' }, status: 409, code: 'conflict', events: [] },
    { name: 'reject without feedback', method: 'POST', path: () => `${A}/${ids.none}/reject`, body: {}, status: 400, code: 'invalid_request', detailPath: 'body.feedback', events: [] },
    {
      name: 'reject with blank feedback',
      method: 'POST',
      path: () => `${A}/${ids.none}/reject`,
      body: { feedback: ' ' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.feedback',
      events: [],
    },
    {
      name: 'approve with an unknown property',
      method: 'POST',
      path: () => `${A}/${ids.none}/approve`,
      body: { verdict: 'yes' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.verdict',
      events: [],
    },
    { name: 'approve an unknown approval', method: 'POST', path: `${A}/${NO_SUCH_ID}/approve`, body: {}, status: 404, code: 'not_found', events: [] },
    { name: 'reject an unknown approval', method: 'POST', path: `${A}/${NO_SUCH_ID}/reject`, body: { feedback: 'x' }, status: 404, code: 'not_found', events: [] },
    { name: 'show', method: 'GET', path: () => `${A}/${ids.review}`, status: 200, dataMatches: () => ({ id: ids.review, status: 'approved', taskFrom: 'review' }), events: [] },
    { name: 'show an unknown approval', method: 'GET', path: `${A}/${NO_SUCH_ID}`, status: 404, code: 'not_found', events: [] },
  ];
  it.each(cases.map((c, i) => [i, c.name, c] as const))('%i %s', async (_i, _n, c) => run(c, ids));

  it("a mission task: the request carries the task's mission, and approving its last review completes the mission in the same transaction", async () => {
    const created = await d.api('POST', '/api/v1/missions', { body: { name: 'release', tasks: [{ title: 'tag it' }] } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const mission = created.body.data;
    expect((await d.api('POST', `/api/v1/missions/${mission.id}/start`)).status).toBe(200);
    const taskId = mission.tasks[0].id;
    for (const to of ['assigned', 'in_progress', 'review']) expect((await d.api('POST', `/api/v1/tasks/${taskId}/transition`, { body: { to } })).status).toBe(200);

    await runCase(d, {
      name: 'mission mismatch',
      method: 'POST',
      path: A,
      body: { taskId, missionId: 'another-mission', requestedBy: 'ana', title: 'x' },
      status: 422,
      code: 'unprocessable',
      detailPath: 'body.missionId',
      events: [],
    });
    const a = await request(d, { taskId });
    expect(a).toMatchObject({ missionId: mission.id, taskFrom: 'review' });

    const before = await d.daemon.app.events.lastId();
    expect((await d.api('POST', `${A}/${a.id}/approve`, { body: { resolvedBy: 'lead' } })).status).toBe(200);
    expect((await d.daemon.app.events.since(before, 100)).map((e) => e.name)).toEqual(['approval:resolved', 'task:transition', 'mission:completed']);
  });

  it.each(['done', 'assigned', 'pending', 'failed'])('a task with a pending approval cannot be moved to %s by hand: 409 naming the approval, nothing written', async (to) => {
    const task = await taskIn(d, 'review');
    const a = await request(d, { taskId: task.id });
    await runCase(d, {
      name: `awaiting_approval → ${to} by hand`,
      method: 'POST',
      path: `/api/v1/tasks/${task.id}/transition`,
      body: { to },
      status: 409,
      code: 'conflict',
      message: new RegExp(`^Task ${task.id} is waiting for approval ${a.id}; approve or reject it`),
      events: [],
    });
    expect((await getTask(d, task.id)).status).toBe('awaiting_approval');
    expect((await getApproval(d, a.id)).status).toBe('pending');

    // The decision itself still moves the task (review → done on approve).
    const before = await d.daemon.app.events.lastId();
    expect((await d.api('POST', `${A}/${a.id}/approve`, { body: { resolvedBy: 'lead' } })).status).toBe(200);
    expect((await d.daemon.app.events.since(before, 100)).map((e) => e.name)).toEqual(['approval:resolved', 'task:transition']);
    expect((await getTask(d, task.id)).status).toBe('done');
  });

  it('reject passes the guard too: the task goes back to pending', async () => {
    const task = await taskIn(d, 'assigned');
    const a = await request(d, { taskId: task.id });
    expect((await d.api('POST', `${A}/${a.id}/reject`, { body: { feedback: 'not yet' } })).status).toBe(200);
    expect(await getTask(d, task.id)).toMatchObject({ status: 'pending', revisionCount: 1 });
  });

  it('once decided, the task moves freely again', async () => {
    const task = await taskIn(d, 'pending');
    const a = await request(d, { taskId: task.id });
    expect((await d.api('POST', `${A}/${a.id}/approve`, { body: {} })).status).toBe(200);
    expect((await d.api('POST', `/api/v1/tasks/${task.id}/transition`, { body: { to: 'in_progress' } })).status).toBe(200);
  });

  it('a task taken out of awaiting_approval in an older database: the decision is recorded, the task left as it is', async () => {
    const task = await taskIn(d, 'pending');
    const a = await request(d, { taskId: task.id });
    await legacyMove(d, task.id, 'failed');
    const before = await d.daemon.app.events.lastId();
    const res = await d.api('POST', `${A}/${a.id}/approve`, { body: { resolvedBy: 'lead' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'approved' });
    expect((await d.daemon.app.events.since(before, 100)).map((e) => e.name)).toEqual(['approval:resolved']);
    expect((await getTask(d, task.id)).status).toBe('failed');
  });

  it('a task with a pending approval can still be deleted; the decision is recorded afterwards', async () => {
    const task = await taskIn(d, 'pending');
    const a = await request(d, { taskId: task.id });
    expect((await d.api('DELETE', `/api/v1/tasks/${task.id}`)).status).toBe(200);
    const before = await d.daemon.app.events.lastId();
    const res = await d.api('POST', `${A}/${a.id}/reject`, { body: { feedback: 'gone anyway' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'rejected', taskId: task.id });
    expect((await d.daemon.app.events.since(before, 100)).map((e) => e.name)).toEqual(['approval:resolved']);
  });

  it('a task waits on one approval at a time: a stale pending request (older database) must be decided first', async () => {
    const task = await taskIn(d, 'pending');
    const first = await request(d, { taskId: task.id });
    // Out of awaiting_approval with its request pending, so the state machine alone would allow a new request.
    await legacyMove(d, task.id, 'pending');
    await runCase(d, {
      name: 'second request',
      method: 'POST',
      path: A,
      body: { taskId: task.id, requestedBy: 'ana', title: 'again' },
      status: 409,
      code: 'conflict',
      message: new RegExp(first.id),
      events: [],
    });
    expect((await d.api('POST', `${A}/${first.id}/approve`, { body: {} })).status).toBe(200);
    expect((await getTask(d, task.id)).status).toBe('pending');
    const second = await request(d, { taskId: task.id, title: 'again' });
    expect(second.taskFrom).toBe('pending');
    expect((await getTask(d, task.id)).status).toBe('awaiting_approval');
  });
});

describe('the way in: only through a request', () => {
  it.each(['pending', 'assigned', 'in_progress', 'review'])('moving a %s task to awaiting_approval by hand is 409 naming POST /api/v1/approvals; nothing written', async (from) => {
    const task = await taskIn(d, from);
    await runCase(d, {
      name: `${from} → awaiting_approval by hand`,
      method: 'POST',
      path: `/api/v1/tasks/${task.id}/transition`,
      body: { to: 'awaiting_approval', reason: 'I would like a review' },
      status: 409,
      code: 'invalid_transition',
      message: new RegExp(`^Task ${task.id} cannot move from ${from} to awaiting_approval by hand: .*POST /api/v1/approvals`),
      events: [],
    });
    expect(await getTask(d, task.id)).toMatchObject({ status: from, updatedAt: task.updatedAt });
    expect((await d.api('GET', `${A}?taskId=${task.id}`)).body.data).toEqual([]);
  });

  it('a move the state machine forbids anyway keeps its own message (done → awaiting_approval)', async () => {
    const task = await taskIn(d, 'done');
    const res = await d.api('POST', `/api/v1/tasks/${task.id}/transition`, { body: { to: 'awaiting_approval' } });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('invalid_transition');
    expect(res.body.error).toMatch(/done/);
  });

  it('the request is the way in: the same task moves there through POST /approvals', async () => {
    const task = await taskIn(d, 'in_progress');
    expect((await d.api('POST', `/api/v1/tasks/${task.id}/transition`, { body: { to: 'awaiting_approval' } })).status).toBe(409);
    const a = await request(d, { taskId: task.id });
    expect(a).toMatchObject({ taskId: task.id, taskFrom: 'in_progress', status: 'pending' });
    expect((await getTask(d, task.id)).status).toBe('awaiting_approval');
  });
});

describe('listing', () => {
  it('newest first, filtered by status and taskId', async () => {
    const task = await taskIn(d, 'pending');
    const mine = await request(d, { taskId: task.id, title: 'listed' });
    const all = (await d.api('GET', A)).body.data as any[];
    expect(all[0].id).toBe(mine.id);
    expect(all.map((a) => a.id)).toEqual([...all.map((a) => a.id)].sort().reverse());
    for (const status of ['pending', 'approved', 'rejected']) {
      const some = (await d.api('GET', `${A}?status=${status}`)).body.data as any[];
      expect(some.length).toBeGreaterThan(0);
      expect(some.every((a) => a.status === status)).toBe(true);
      expect(some.map((a) => a.id)).toEqual(all.filter((a) => a.status === status).map((a) => a.id));
    }
    expect((await d.api('GET', `${A}?taskId=${task.id}`)).body.data.map((a: any) => a.id)).toEqual([mine.id]);
    expect((await d.api('GET', `${A}?taskId=${NO_SUCH_ID}`)).body).toEqual({ ok: true, data: [] });
  });

  it('pages with limit and X-Next-Cursor, absent on the last page', async () => {
    const all = (await d.api('GET', `${A}?limit=200`)).body.data as any[];
    expect(all.length).toBeGreaterThan(3);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await d.api('GET', `${A}?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((a: any) => a.id));
      cursor = res.headers.get('x-next-cursor');
    } while (cursor);
    expect(seen).toEqual(all.map((a) => a.id));
  });

  it.each([
    ['status', `${A}?status=open`, 'query.status'],
    ['limit', `${A}?limit=0`, 'query.limit'],
    ['cursor', `${A}?cursor=abc`, 'query.cursor'],
    ['unknown parameter', `${A}?colour=red`, 'query.colour'],
  ])('bad %s → 400', async (_n, path, detail) => {
    await runCase(d, { name: path, method: 'GET', path, status: 400, code: 'invalid_request', detailPath: detail, events: [] });
  });
});

describe('timeouts', () => {
  it.each([
    { action: 'approve', status: 'approved', from: 'pending', to: 'assigned', revisionCount: 0 },
    { action: 'approve', status: 'approved', from: 'review', to: 'done', revisionCount: 0 },
    { action: 'reject', status: 'rejected', from: 'in_progress', to: 'pending', revisionCount: 1 },
  ])('timeoutAction $action on a task from $from: → $to, resolvedBy "timeout"', async (c) => {
    const task = await taskIn(d, c.from);
    const a = await request(d, { taskId: task.id, timeoutSeconds: 30, timeoutAction: c.action });
    await clock.pass(29_999);
    expect((await getApproval(d, a.id)).status).toBe('pending');
    await clock.pass(1);
    const after = await getApproval(d, a.id);
    expect(after).toMatchObject({ status: c.status, resolvedBy: 'timeout', timedOut: true, note: null, feedback: null, resolvedAt: a.expiresAt });
    expect(await getTask(d, task.id)).toMatchObject({ status: c.to, revisionCount: c.revisionCount });
    expect(await eventsOf(d, a.id)).toEqual([
      { name: 'approval:requested', data: { approvalId: a.id, kind: 'task', taskId: task.id, missionId: null, title: 'may I?', requestedBy: 'ana', runId: null, tool: null } },
      { name: 'attention:needed', data: expect.objectContaining({ reason: 'approval', approvalId: a.id }) },
      { name: 'task:transition', data: { taskId: task.id, from: c.from, to: 'awaiting_approval', reason: `approval ${a.id} requested by ana` } },
      { name: 'approval:resolved', data: { approvalId: a.id, kind: 'task', taskId: task.id, runId: null, status: c.status, resolvedBy: 'timeout', timedOut: true, alwaysAllowed: null } },
      { name: 'task:transition', data: { taskId: task.id, from: 'awaiting_approval', to: c.to, reason: `approval ${a.id} timed out (${c.status})` } },
    ]);
  });

  it('a timed request decided by a person first is not decided again when it expires', async () => {
    const task = await taskIn(d, 'pending');
    const a = await request(d, { taskId: task.id, timeoutSeconds: 1, timeoutAction: 'reject' });
    expect((await d.api('POST', `${A}/${a.id}/approve`, { body: { resolvedBy: 'lead' } })).status).toBe(200);
    await clock.pass(60_000);
    expect(await getApproval(d, a.id)).toMatchObject({ status: 'approved', resolvedBy: 'lead', timedOut: false });
    expect((await eventsOf(d, a.id)).filter((e) => e.name === 'approval:resolved')).toHaveLength(1);
    expect((await getTask(d, task.id)).status).toBe('assigned');
  });
});

describe('timeouts across a restart', () => {
  it('a pending timeout fires after the daemon restarts: overdue ones at once, the rest when due', async () => {
    const time = new FakeClock(Date.now());
    const first = await startTestDaemon({ keepRoot: true, clock: time });
    let second: TestDaemon | undefined;
    try {
      const soonTask = await taskIn(first, 'pending');
      const laterTask = await taskIn(first, 'review');
      const soon = await request(first, { taskId: soonTask.id, timeoutSeconds: 60, timeoutAction: 'approve' });
      const later = await request(first, { taskId: laterTask.id, timeoutSeconds: 3600 });
      // Armed once the daemon has heard the requests and read what waits: after the commit, so
      // on PostgreSQL a read of its own that may still be under way when the answer arrives.
      await until('the timer armed for the first expiry', async () => time.nextAt === Date.parse(soon.expiresAt));
      await first.close();
      // A closed daemon leaves no timer: nothing is left to fire while it is down.
      expect(time.pending).toBe(0);

      // Down past the first expiry.
      await time.pass(10 * 60_000);
      second = await startTestDaemon({ root: first.root, clock: time });

      // Decided during start-up, before the daemon answered its first request.
      expect(await getApproval(second, soon.id)).toMatchObject({ status: 'approved', resolvedBy: 'timeout', timedOut: true });
      expect((await getTask(second, soonTask.id)).status).toBe('assigned');
      expect((await eventsOf(second, soon.id)).map((e) => e.name)).toEqual(['approval:requested', 'attention:needed', 'task:transition', 'approval:resolved', 'task:transition']);

      // Not yet due: armed for its expiry, and decided by the new daemon exactly then.
      expect((await getApproval(second, later.id)).status).toBe('pending');
      expect(time.nextAt).toBe(Date.parse(later.expiresAt));
      await time.passTo(Date.parse(later.expiresAt) - 1);
      expect((await getApproval(second, later.id)).status).toBe('pending');
      await time.pass(1);
      expect(await getApproval(second, later.id)).toMatchObject({ status: 'rejected', resolvedBy: 'timeout', timedOut: true, resolvedAt: later.expiresAt });
      expect(await getTask(second, laterTask.id)).toMatchObject({ status: 'pending', revisionCount: 1 });
      expect(time.pending).toBe(0);
    } finally {
      await first.close();
      await second?.close();
    }
  });
});

describe('tasks.maxRevisions', () => {
  it('a task goes round for revision at most tasks.maxRevisions times (3 by default); the rejection after fails it, saying why', async () => {
    const task = await taskIn(d, 'review');
    for (let n = 1; n <= 3; n++) {
      const a = await request(d, { taskId: task.id, title: `round ${n}` });
      expect((await d.api('POST', `${A}/${a.id}/reject`, { body: { feedback: `fix ${n}` } })).status).toBe(200);
      expect(await getTask(d, task.id)).toMatchObject({ status: 'pending', revisionCount: n });
    }
    const last = await request(d, { taskId: task.id, title: 'round 4' });
    const res = await d.api('POST', `${A}/${last.id}/reject`, { body: { feedback: 'still wrong' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'rejected', feedback: 'still wrong' });
    const failed = await getTask(d, task.id);
    expect(failed).toMatchObject({ status: 'failed', revisionCount: 3, result: { error: 'rejected after 3 revision(s); tasks.maxRevisions is 3: still wrong', approvalId: last.id } });
    expect(failed.description).not.toContain('still wrong');
    const moved = (await eventsOf(d, last.id)).find((e) => e.name === 'task:transition' && e.data.to === 'failed');
    expect(moved?.data.reason).toBe(`approval ${last.id} rejected by local; tasks.maxRevisions (3) reached`);
  });

  it('0 allows no revision: the first rejection fails the task; a bad value names the setting', async () => {
    const zero = await startTestDaemon({ config: { tasks: { maxRevisions: 0 } } });
    try {
      const task = await taskIn(zero, 'pending');
      const a = await request(zero, { taskId: task.id });
      expect((await zero.api('POST', `${A}/${a.id}/reject`, { body: { feedback: 'no' } })).status).toBe(200);
      expect(await getTask(zero, task.id)).toMatchObject({ status: 'failed', revisionCount: 0 });
    } finally {
      await zero.close();
    }
    await expect(startTestDaemon({ config: { tasks: { maxRevisions: -1 } } })).rejects.toThrow(/tasks\.maxRevisions/);
  });
});
