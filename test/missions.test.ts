import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../src/kernel/errors.js';
import { findCycle, planTasks } from '../src/resources/missions/plan.js';
import { TASK_HOOKS } from '../src/resources/tasks/hooks.js';
import { svcAgainst } from './cli-helpers.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { runCase, type ApiCase, type ExpectedEvent } from './scenarios.js';

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
  expect((await d.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
});
afterAll(async () => {
  await d.close();
});

const M = '/api/v1/missions';
const lastEventId = async () => await d.daemon.app.events.lastId();
const hooks = () => d.daemon.app.services.get(TASK_HOOKS);
const eventsAfter = async (id: number) => (await d.daemon.app.events.since(id, 1000)).map((e) => ({ name: e.name, data: e.data }));

const zero = { draft: 0, pending: 0, assigned: 0, in_progress: 0, review: 0, awaiting_approval: 0, done: 0, failed: 0 };
const progress = (counts: Partial<typeof zero>) => {
  const p = { ...zero, ...counts };
  return { total: Object.values(p).reduce((a, b) => a + b, 0), ...p };
};

async function createMission(body: Record<string, unknown>): Promise<any> {
  const res = await d.api('POST', M, { body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

async function move(taskId: string, ...states: string[]): Promise<void> {
  for (const to of states) {
    const res = await d.api('POST', `/api/v1/tasks/${taskId}/transition`, { body: { to } });
    expect(res.status, `${to}: ${JSON.stringify(res.body)}`).toBe(200);
  }
}

const byTitle = (m: any): Record<string, any> => Object.fromEntries(m.tasks.map((t: any) => [t.title, t]));

describe('planTasks (pure)', () => {
  it('orders dependencies first and keeps the written order otherwise', () => {
    expect(planTasks([{ title: 'a' }, { title: 'b', dependsOn: ['a'] }]).order).toEqual([0, 1]);
    expect(planTasks([{ title: 'c', dependsOn: ['b'] }, { title: 'b', dependsOn: ['a'] }, { title: 'a' }, { title: 'd' }]).order).toEqual([2, 1, 0, 3]);
    expect(planTasks([{ title: 'a' }, { title: 'b', dependsOn: ['a', 'a'] }]).deps).toEqual([[], [0]]);
  });

  it.each([
    ['self', [[0]], [0, 0]],
    ['two', [[1], [0]], [0, 1, 0]],
    ['three, entered late', [[], [2], [3], [1]], [1, 2, 3, 1]],
    ['none', [[], [0], [0, 1]], null],
  ])('findCycle: %s', (_n, deps, cycle) => {
    expect(findCycle(deps as number[][])).toEqual(cycle);
  });
});

// Mission ids and task ids made by earlier cases.
const ids: Record<string, string> = {};
const tasks: Record<string, Record<string, any>> = {};
const m = (key: string, suffix = '') => `${M}/${ids[key]}${suffix}`;
const ev = (name: string, key: string, name_: string, extra: Record<string, unknown> = {}): ExpectedEvent => ({ name, data: { missionId: ids[key], name: name_, ...extra } });
const released = (key: string, ...titles: string[]): ExpectedEvent[] =>
  titles.map((t) => ({ name: 'task:transition', data: { taskId: tasks[key]![t].id, from: 'draft', to: 'pending', reason: 'mission started' } }));

interface Case extends ApiCase {
  save?: string;
}

const SHIP = {
  name: 'ship v1',
  goal: 'release the first version',
  deadline: '2030-01-01T12:00:00+02:00',
  tasks: [
    { title: 'design', description: 'sketch it' },
    { title: 'build', dependsOn: ['design'], assignTo: 'ana', priority: 'high', labels: ['code'] },
    { title: 'release', dependsOn: ['build', 'design'], maxRetries: 0 },
  ],
};

const created = (key: string, name: string, titles: string[]) => (): ExpectedEvent[] => [
  ...titles.map((t) => ({ name: 'task:created', data: { taskId: tasks[key]![t].id, title: t, status: 'draft', assignTo: tasks[key]![t].assignTo, missionId: ids[key] } })),
  ev('mission:created', key, name, { taskIds: titles.map((t) => tasks[key]![t].id) }),
];

const cases: Case[] = [
  {
    name: 'create a mission with its tasks (draft, dependsOn resolved)',
    method: 'POST',
    path: M,
    body: SHIP,
    status: 201,
    save: 'ship',
    dataMatches: () => ({
      id: ids.ship,
      name: 'ship v1',
      goal: 'release the first version',
      status: 'draft',
      deadline: '2030-01-01T10:00:00.000Z',
      taskIds: ['design', 'build', 'release'].map((t) => tasks.ship![t].id),
      progress: progress({ draft: 3 }),
    }),
    events: created('ship', 'ship v1', ['design', 'build', 'release']),
  },
  {
    name: 'tasks listed out of dependency order are created dependencies first',
    method: 'POST',
    path: M,
    body: { name: 'reordered', tasks: [{ title: 'second', dependsOn: ['first'] }, { title: 'first' }] },
    status: 201,
    save: 'reordered',
    dataMatches: { progress: progress({ draft: 2 }) },
    events: created('reordered', 'reordered', ['first', 'second']),
  },
  { name: 'a mission with no tasks', method: 'POST', path: M, body: { name: 'empty' }, status: 201, save: 'empty', dataMatches: { taskIds: [], goal: null, deadline: null, progress: progress({}) } },
  { name: 'a mission to cancel while active', method: 'POST', path: M, body: { name: 'idle', tasks: [{ title: 'wait' }] }, status: 201, save: 'idle' },
  {
    name: 'duplicate titles → 422 naming the title',
    method: 'POST',
    path: M,
    body: { name: 'dup', tasks: [{ title: 'a' }, { title: 'b' }, { title: 'a' }] },
    status: 422,
    code: 'unprocessable',
    detailPath: 'body.tasks.2.title',
    message: /duplicate title "a"/,
    events: [],
  },
  {
    name: 'unknown dependency title → 422',
    method: 'POST',
    path: M,
    body: { name: 'unknown', tasks: [{ title: 'a' }, { title: 'b', dependsOn: ['a', 'ghost'] }] },
    status: 422,
    code: 'unprocessable',
    detailPath: 'body.tasks.1.dependsOn.1',
    message: /no task titled "ghost"/,
    events: [],
  },
  {
    name: 'a cycle → 422 naming the cycle',
    method: 'POST',
    path: M,
    body: { name: 'cycle', tasks: [{ title: 'a', dependsOn: ['b'] }, { title: 'b', dependsOn: ['c'] }, { title: 'c', dependsOn: ['a'] }, { title: 'd' }] },
    status: 422,
    code: 'unprocessable',
    detailPath: 'body.tasks.0.dependsOn',
    message: /dependency cycle: a → b → c → a/,
    events: [],
  },
  {
    name: 'a task depending on itself is a cycle',
    method: 'POST',
    path: M,
    body: { name: 'self', tasks: [{ title: 'x', dependsOn: ['x'] }] },
    status: 422,
    code: 'unprocessable',
    message: /x → x/,
    events: [],
  },
  {
    name: 'unknown assignee → 422',
    method: 'POST',
    path: M,
    body: { name: 'who', tasks: [{ title: 'x', assignTo: 'ghost' }] },
    status: 422,
    code: 'unprocessable',
    detailPath: 'body.tasks.0.assignTo',
    events: [],
  },
  { name: 'name is required', method: 'POST', path: M, body: { tasks: [] }, status: 400, code: 'invalid_request', detailPath: 'body.name', events: [] },
  {
    name: 'task bodies are strict',
    method: 'POST',
    path: M,
    body: { name: 'x', tasks: [{ title: 'x', colour: 'red' }] },
    status: 400,
    code: 'invalid_request',
    detailPath: 'body.tasks.0.colour',
    events: [],
  },
  {
    name: 'a task of a mission gets no missionId of its own',
    method: 'POST',
    path: M,
    body: { name: 'x', tasks: [{ title: 'x', missionId: 'm' }] },
    status: 400,
    code: 'invalid_request',
    detailPath: 'body.tasks.0.missionId',
    events: [],
  },
  { name: 'deadline must be ISO 8601', method: 'POST', path: M, body: { name: 'x', deadline: 'tomorrow' }, status: 400, code: 'invalid_request', detailPath: 'body.deadline', events: [] },
  {
    name: 'show: tasks and progress',
    method: 'GET',
    path: () => m('ship'),
    status: 200,
    dataMatches: () => ({ status: 'draft', progress: progress({ draft: 3 }), tasks: ['design', 'build', 'release'].map((t) => ({ id: tasks.ship![t].id, status: 'draft' })) }),
    events: [],
  },
  { name: 'show unknown', method: 'GET', path: `${M}/nope`, status: 404, code: 'not_found', events: [] },
  {
    name: 'a draft mission holds its tasks in draft',
    method: 'POST',
    path: () => `/api/v1/tasks/${tasks.ship!.design.id}/transition`,
    body: { to: 'pending' },
    status: 409,
    code: 'conflict',
    message: /still draft; start the mission/,
    events: [],
  },
  { name: 'pause a draft mission', method: 'POST', path: () => m('ship', '/pause'), status: 409, code: 'invalid_transition', message: /from draft to paused/, events: [] },
  { name: 'resume a draft mission', method: 'POST', path: () => m('ship', '/resume'), status: 409, code: 'invalid_transition', message: /from draft to active/, events: [] },
  {
    name: 'start: active, draft tasks → pending',
    method: 'POST',
    path: () => m('ship', '/start'),
    status: 200,
    dataMatches: { status: 'active', progress: progress({ pending: 3 }) },
    events: () => [ev('mission:started', 'ship', 'ship v1'), ...released('ship', 'design', 'build', 'release')],
  },
  { name: 'start twice', method: 'POST', path: () => m('ship', '/start'), status: 409, code: 'invalid_transition', message: /from active to active/, events: [] },
  { name: 'resume an active mission', method: 'POST', path: () => m('ship', '/resume'), status: 409, code: 'invalid_transition', message: /from active to active/, events: [] },
  { name: 'pause', method: 'POST', path: () => m('ship', '/pause'), status: 200, dataMatches: { status: 'paused' }, events: () => [ev('mission:paused', 'ship', 'ship v1')] },
  { name: 'pause twice', method: 'POST', path: () => m('ship', '/pause'), status: 409, code: 'invalid_transition', message: /from paused to paused/, events: [] },
  {
    name: "a paused mission's tasks cannot be claimed (nothing half done)",
    method: 'POST',
    path: () => `/api/v1/tasks/${tasks.ship!.design.id}/claim`,
    body: { agent: 'ana' },
    status: 409,
    code: 'conflict',
    message: /mission .* is paused; resume the mission first/,
    events: [],
  },
  { name: 'resume', method: 'POST', path: () => m('ship', '/resume'), status: 200, dataMatches: { status: 'active' }, events: () => [ev('mission:resumed', 'ship', 'ship v1')] },
  {
    name: 'start the empty mission: nothing to do, so it completes at once',
    method: 'POST',
    path: () => m('empty', '/start'),
    status: 200,
    dataMatches: { status: 'completed', progress: progress({}) },
    events: () => [ev('mission:started', 'empty', 'empty'), ev('mission:completed', 'empty', 'empty')],
  },
  { name: 'the started empty mission is final', method: 'POST', path: () => m('empty', '/cancel'), status: 409, code: 'invalid_transition', message: /from completed to cancelled/, events: [] },
  {
    name: 'start a mission with a task',
    method: 'POST',
    path: () => m('idle', '/start'),
    status: 200,
    dataMatches: { status: 'active' },
    events: () => [ev('mission:started', 'idle', 'idle'), ...released('idle', 'wait')],
  },
  {
    name: 'cancel an active mission',
    method: 'POST',
    path: () => m('idle', '/cancel'),
    status: 200,
    dataMatches: { status: 'cancelled', progress: progress({ pending: 1 }) },
    events: () => [ev('mission:cancelled', 'idle', 'idle')],
  },
  {
    name: 'cancel a draft mission',
    method: 'POST',
    path: () => m('reordered', '/cancel'),
    status: 200,
    dataMatches: { status: 'cancelled', progress: progress({ draft: 2 }) },
    events: () => [ev('mission:cancelled', 'reordered', 'reordered')],
  },
  { name: 'cancel twice', method: 'POST', path: () => m('reordered', '/cancel'), status: 409, code: 'invalid_transition', message: /from cancelled to cancelled/, events: [] },
  { name: 'start a cancelled mission', method: 'POST', path: () => m('reordered', '/start'), status: 409, code: 'invalid_transition', message: /from cancelled to active/, events: [] },
  { name: 'action on an unknown mission', method: 'POST', path: `${M}/nope/start`, status: 404, code: 'not_found', events: [] },
];

describe('missions', () => {
  it.each(cases.map((c, i) => [i, c.name, c] as const))('%i %s', async (_i, _n, c) => {
    await runCase(d, {
      ...c,
      onSuccess: (data) => {
        if (!c.save) return;
        ids[c.save] = data.id;
        tasks[c.save] = byTitle(data);
      },
    });
  });

  it('created tasks carry the mission, their fields and dependencies resolved to ids', () => {
    const t = tasks.ship!;
    expect(t.design).toMatchObject({ status: 'draft', missionId: ids.ship, description: 'sketch it', dependsOn: [] });
    expect(t.build).toMatchObject({ missionId: ids.ship, dependsOn: [t.design.id], assignTo: 'ana', priority: 'high', labels: ['code'] });
    expect(t.release).toMatchObject({ dependsOn: [t.build.id, t.design.id], maxRetries: 0 });
    expect(tasks.reordered!.second.dependsOn).toEqual([tasks.reordered!.first.id]);
  });

  it('a refused mission leaves no task behind', async () => {
    const before = (await d.api('GET', '/api/v1/tasks?limit=200')).body.data.length;
    const res = await d.api('POST', M, { body: { name: 'half', tasks: [{ title: 'ok' }, { title: 'bad', assignTo: 'ghost' }] } });
    expect(res.status).toBe(422);
    expect((await d.api('GET', '/api/v1/tasks?limit=200')).body.data.length).toBe(before);
  });

  it('completes by itself when the last task is done (through the task transition endpoint)', async () => {
    const t = tasks.ship!;
    await move(t.design.id, 'assigned', 'in_progress', 'review', 'done');
    await move(t.build.id, 'assigned', 'in_progress', 'review');
    expect((await d.api('GET', m('ship'))).body.data).toMatchObject({ status: 'active', progress: progress({ done: 1, review: 1, pending: 1 }) });
    await move(t.build.id, 'done');
    await move(t.release.id, 'assigned', 'in_progress', 'review');

    const before = await lastEventId();
    await move(t.release.id, 'done');
    expect(await eventsAfter(before)).toEqual([
      { name: 'task:transition', data: { taskId: t.release.id, from: 'review', to: 'done' } },
      { name: 'mission:completed', data: { missionId: ids.ship, name: 'ship v1' } },
    ]);
    expect((await d.api('GET', m('ship'))).body.data).toMatchObject({ status: 'completed', progress: progress({ done: 3 }) });
    await runCase(d, { name: 'completed is final', method: 'POST', path: m('ship', '/cancel'), status: 409, code: 'invalid_transition', message: /from completed to cancelled/, events: [] });
  });
});

describe('one transaction', () => {
  const count = async (sql: string, ...args: unknown[]) => ((await d.daemon.app.db.prepare(sql).get(...args)) as { n: number }).n;

  it('a failure on the second task insert leaves no mission, no task and no event', async () => {
    const tasksBefore = await count('SELECT count(*) AS n FROM tasks');
    const missionsBefore = await count('SELECT count(*) AS n FROM missions');
    let calls = 0;
    let writtenWhenItFailed = 0;
    const off = hooks().beforeCreate(async (_app, input) => {
      if (!input.missionId || ++calls !== 2) return;
      // By now the mission and its first task are written: only a rollback can take them back.
      writtenWhenItFailed = (await count('SELECT count(*) AS n FROM missions WHERE id = ?', input.missionId)) + (await count('SELECT count(*) AS n FROM tasks WHERE mission_id = ?', input.missionId));
      throw new AppError('conflict', 'injected failure on the second task');
    });
    try {
      const before = await lastEventId();
      const res = await d.api('POST', M, { body: { name: 'torn', tasks: [{ title: 'one' }, { title: 'two' }, { title: 'three' }] } });
      expect(res.status).toBe(409);
      expect(res.body.error).toBe('injected failure on the second task');
      expect(writtenWhenItFailed).toBe(2);
      expect(await count('SELECT count(*) AS n FROM missions')).toBe(missionsBefore);
      expect(await count("SELECT count(*) AS n FROM missions WHERE name = 'torn'")).toBe(0);
      expect(await count('SELECT count(*) AS n FROM tasks')).toBe(tasksBefore);
      expect(await eventsAfter(before)).toEqual([]);
    } finally {
      off();
    }
  });
});

describe('removing tasks', () => {
  it.each(['active', 'paused'])('removing the last open task of an %s mission completes it, in the same transaction', async (state) => {
    const name = `shrinking ${state}`;
    const mission = await createMission({ name, tasks: [{ title: 'a' }, { title: 'b' }] });
    const { a, b } = byTitle(mission);
    expect((await d.api('POST', `${M}/${mission.id}/start`)).status).toBe(200);
    await move(a.id, 'assigned', 'in_progress', 'review', 'done');
    if (state === 'paused') expect((await d.api('POST', `${M}/${mission.id}/pause`)).status).toBe(200);
    expect((await d.api('GET', `${M}/${mission.id}`)).body.data.status).toBe(state);

    const before = await lastEventId();
    expect((await d.api('DELETE', `/api/v1/tasks/${b.id}`)).status).toBe(200);
    expect(await eventsAfter(before)).toEqual([
      { name: 'task:removed', data: { taskId: b.id } },
      { name: 'mission:completed', data: { missionId: mission.id, name } },
    ]);
    expect((await d.api('GET', `${M}/${mission.id}`)).body.data).toMatchObject({ status: 'completed', progress: progress({ done: 1 }) });
  });

  it('removing every task leaves the mission active; a task may join it, and finishing that completes it', async () => {
    const mission = await createMission({ name: 'emptied', tasks: [{ title: 'only' }] });
    expect((await d.api('POST', `${M}/${mission.id}/start`)).status).toBe(200);
    const before = await lastEventId();
    expect((await d.api('DELETE', `/api/v1/tasks/${mission.taskIds[0]}`)).status).toBe(200);
    expect(await eventsAfter(before)).toEqual([{ name: 'task:removed', data: { taskId: mission.taskIds[0] } }]);
    expect((await d.api('GET', `${M}/${mission.id}`)).body.data).toMatchObject({ status: 'active', progress: progress({}) });

    const again = await d.api('POST', '/api/v1/tasks', { body: { title: 'only', missionId: mission.id } });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.data.status).toBe('pending');
    expect((await d.api('GET', `${M}/${mission.id}`)).body.data.status).toBe('active');
    await move(again.body.data.id, 'assigned', 'in_progress', 'review', 'done');
    expect((await d.api('GET', `${M}/${mission.id}`)).body.data).toMatchObject({ status: 'completed', progress: progress({ done: 1 }) });
  });

  it('a cancelled mission stays cancelled when its open task goes', async () => {
    const mission = await createMission({ name: 'abandoned', tasks: [{ title: 'a' }, { title: 'b' }] });
    const { a, b } = byTitle(mission);
    await d.api('POST', `${M}/${mission.id}/start`);
    await move(a.id, 'assigned', 'in_progress', 'review', 'done');
    await d.api('POST', `${M}/${mission.id}/cancel`);
    const before = await lastEventId();
    expect((await d.api('DELETE', `/api/v1/tasks/${b.id}`)).status).toBe(200);
    expect(await eventsAfter(before)).toEqual([{ name: 'task:removed', data: { taskId: b.id } }]);
    expect((await d.api('GET', `${M}/${mission.id}`)).body.data.status).toBe('cancelled');
  });

  it('deleting a running mission with its tasks does not complete it on the way', async () => {
    const mission = await createMission({ name: 'half done', tasks: [{ title: 'a' }, { title: 'b' }] });
    const { a, b } = byTitle(mission);
    await d.api('POST', `${M}/${mission.id}/start`);
    await move(a.id, 'assigned', 'in_progress', 'review', 'done');
    const before = await lastEventId();
    expect((await d.api('DELETE', `${M}/${mission.id}?cascade=true`)).status).toBe(200);
    expect(await eventsAfter(before)).toEqual([
      { name: 'task:removed', data: { taskId: b.id } },
      { name: 'task:removed', data: { taskId: a.id } },
      { name: 'mission:deleted', data: { missionId: mission.id, name: 'half done', cascade: true } },
    ]);
  });
});

describe('tasks joining a mission through POST /tasks', () => {
  const T = '/api/v1/tasks';
  const ms: Record<string, any> = {};
  let joined: any = null;
  beforeAll(async () => {
    for (const key of ['draft', 'active', 'paused', 'completed', 'failed', 'cancelled']) {
      ms[key] = await createMission({ name: `join ${key}`, tasks: key === 'completed' ? [] : [{ title: 'planned', maxRetries: 0 }] });
      if (key !== 'draft' && key !== 'cancelled') expect((await d.api('POST', `${M}/${ms[key].id}/start`)).status).toBe(200);
    }
    await d.api('POST', `${M}/${ms.paused.id}/pause`);
    await d.api('POST', `${M}/${ms.cancelled.id}/cancel`);
    await move(ms.failed.taskIds[0], 'assigned', 'in_progress', 'failed');
    for (const key of ['draft', 'active', 'paused', 'completed', 'failed', 'cancelled']) {
      expect((await d.api('GET', `${M}/${ms[key].id}`)).body.data.status).toBe(key);
    }
  });

  const joins = (key: string, title: string, status: string, extra: Record<string, unknown> = {}): ApiCase => ({
    name: `joins a ${key} mission as ${status}${extra.draft ? ' (asked draft)' : ''}`,
    method: 'POST',
    path: T,
    body: () => ({ title, missionId: ms[key].id, ...extra }),
    status: 201,
    dataMatches: () => ({ status, missionId: ms[key].id }),
    onSuccess: (data) => (joined = data),
    events: () => [{ name: 'task:created', data: { taskId: joined.id, title, status, assignTo: null, missionId: ms[key].id } }],
  });
  const refused = (key: string): ApiCase => ({
    name: `a ${key} mission takes no new task → 409`,
    method: 'POST',
    path: T,
    body: () => ({ title: 'too late', missionId: ms[key].id }),
    status: 409,
    code: 'conflict',
    message: new RegExp(`is ${key}: a ${key} mission takes no new tasks`),
    events: [],
  });
  const missionIs = (key: string, status: string, counts: Partial<typeof zero>): ApiCase => ({
    name: `the ${key} mission is ${status} with ${JSON.stringify(counts)}`,
    method: 'GET',
    path: () => `${M}/${ms[key].id}`,
    status: 200,
    dataMatches: { status, progress: progress(counts) },
    events: [],
  });

  const joinCases: ApiCase[] = [
    {
      name: 'an unknown mission → 422',
      method: 'POST',
      path: T,
      body: { title: 'x', missionId: 'no-such-mission' },
      status: 422,
      code: 'unprocessable',
      detailPath: 'body.missionId',
      message: /no-such-mission/,
      events: [],
    },
    joins('draft', 'late', 'draft'),
    missionIs('draft', 'draft', { draft: 2 }),
    {
      name: 'starting the draft mission releases the joined task too',
      method: 'POST',
      path: () => `${M}/${ms.draft.id}/start`,
      status: 200,
      dataMatches: { status: 'active', progress: progress({ pending: 2 }) },
    },
    joins('active', 'extra', 'pending'),
    joins('active', 'maybe', 'draft', { draft: true }),
    missionIs('active', 'active', { pending: 2, draft: 1 }),
    joins('paused', 'extra', 'pending'),
    missionIs('paused', 'paused', { pending: 2 }),
    {
      name: 'a title the mission already has → 422',
      method: 'POST',
      path: T,
      body: () => ({ title: 'planned', missionId: ms.active.id }),
      status: 422,
      code: 'unprocessable',
      detailPath: 'body.title',
      message: /already has a task titled "planned"/,
      events: [],
    },
    refused('completed'),
    refused('failed'),
    refused('cancelled'),
  ];

  it.each(joinCases.map((c, i) => [i, c.name, c] as const))('%i %s', async (_i, _n, c) => {
    await runCase(d, c);
  });
});

describe('failure', () => {
  it.each([
    { maxRetries: 0, failuresBeforeMissionFails: 1 },
    { maxRetries: 1, failuresBeforeMissionFails: 2 },
  ])('a task failing with no retries left fails the mission (maxRetries $maxRetries)', async ({ maxRetries, failuresBeforeMissionFails }) => {
    const mission = await createMission({ name: `fragile ${maxRetries}`, tasks: [{ title: 'risky', maxRetries }, { title: 'other' }] });
    const risky = byTitle(mission).risky;
    await d.api('POST', `${M}/${mission.id}/start`);
    for (let n = 1; n <= failuresBeforeMissionFails; n++) {
      if (n > 1) await move(risky.id, 'pending');
      await move(risky.id, 'assigned', 'in_progress');
      const before = await lastEventId();
      await move(risky.id, 'failed');
      const last = n === failuresBeforeMissionFails;
      expect(await eventsAfter(before)).toEqual([
        { name: 'task:transition', data: { taskId: risky.id, from: 'in_progress', to: 'failed' } },
        // With no retries left a person is needed (test/notify.test.ts), and the mission fails.
        ...(last
          ? [
              { name: 'attention:needed', data: expect.objectContaining({ reason: 'failed', taskId: risky.id }) },
              { name: 'mission:failed', data: { missionId: mission.id, name: `fragile ${maxRetries}`, taskId: risky.id } },
            ]
          : []),
      ]);
      expect((await d.api('GET', `${M}/${mission.id}`)).body.data.status).toBe(last ? 'failed' : 'active');
    }
    const start = await d.api('POST', `/api/v1/tasks/${byTitle(mission).other.id}/claim`, { body: { agent: 'ana' } });
    expect(start.status).toBe(409);
    expect(start.body.error).toMatch(/mission .* is failed/);
  });
});

describe('delete', () => {
  it.each([false, true])('cascade=%s', async (cascade) => {
    const mission = await createMission({ name: `doomed ${cascade}`, tasks: [{ title: 'a' }, { title: 'b', dependsOn: ['a'] }] });
    const [a, b] = mission.taskIds as string[];
    const before = await lastEventId();
    const res = await d.api('DELETE', `${M}/${mission.id}${cascade ? '?cascade=true' : ''}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ removed: true });
    const taskEvents = cascade ? [b, a].map((taskId) => ({ name: 'task:removed', data: { taskId } })) : [a, b].map((taskId) => ({ name: 'task:updated', data: { taskId, fields: ['missionId'] } }));
    expect(await eventsAfter(before)).toEqual([...taskEvents, { name: 'mission:deleted', data: { missionId: mission.id, name: `doomed ${cascade}`, cascade } }]);
    expect((await d.api('GET', `${M}/${mission.id}`)).status).toBe(404);
    for (const id of [a, b]) {
      const t = await d.api('GET', `/api/v1/tasks/${id}`);
      if (cascade) expect(t.status).toBe(404);
      else expect(t.body.data).toMatchObject({ missionId: null, status: 'draft' });
    }
    // Detached tasks are free of the (gone) mission's draft hold.
    if (!cascade) await move(a!, 'pending');
  });

  it.each([
    ['unknown mission', `${M}/nope`, 404, 'not_found'],
    ['cascade must be true or false', `${M}/nope?cascade=yes`, 400, 'invalid_request'],
  ])('%s', async (_n, path, status, code) => {
    const res = await d.api('DELETE', path);
    expect(res.status).toBe(status);
    expect(res.body.code).toBe(code);
  });
});

describe('listing', () => {
  it('pages newest first with X-Next-Cursor and filters by status', async () => {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await createMission({ name: `page ${i}`, tasks: [{ title: 'only' }] })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await d.api('GET', `${M}?status=draft&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      for (const x of res.body.data) expect(x).toMatchObject({ status: 'draft', progress: progress({ draft: 1 }) });
      seen.push(...res.body.data.map((x: { id: string }) => x.id));
      cursor = res.headers.get('x-next-cursor');
    } while (cursor);
    expect(seen.slice(0, 5)).toEqual([...made].reverse());
    const all = (await d.api('GET', M)).body.data.map((x: { id: string }) => x.id);
    expect(all.indexOf(made[4])).toBeLessThan(all.indexOf(ids.ship));
    const completed = (await d.api('GET', `${M}?status=completed&limit=200`)).body.data;
    expect(completed.map((x: { id: string }) => x.id)).toEqual(expect.arrayContaining([ids.ship, ids.empty]));
    expect(completed.map((x: { id: string }) => x.id)).not.toContain(made[0]);
    for (const x of completed) expect(x.status).toBe('completed');
    expect((await d.api('GET', `${M}?limit=0`)).status).toBe(400);
  });
});

describe('svc missions (CLI)', () => {
  const svc = async (...args: string[]) => await svcAgainst(d, args);

  it('adds from YAML, lists, shows progress, starts, pauses, resumes, cancels and removes', async () => {
    const file = join(d.root, 'mission.yaml');
    writeFileSync(file, ['name: from yaml', 'goal: try the CLI', 'tasks:', '  - title: one', '  - title: two', '    dependsOn: [one]', ''].join('\n'));
    const add = await svc('missions', 'add', file, '--json');
    expect(add.code, add.stderr).toBe(0);
    const mission = JSON.parse(add.stdout);
    expect(mission).toMatchObject({ name: 'from yaml', status: 'draft', progress: progress({ draft: 2 }) });
    expect(mission.tasks[1].dependsOn).toEqual([mission.tasks[0].id]);

    const ls = await svc('missions', 'ls');
    expect(ls.stdout).toMatch(/^ID\s+STATUS\s+DONE\s+DEADLINE\s+UPDATED\s+NAME/);
    expect(ls.stdout).toMatch(new RegExp(`^${mission.id.slice(-8)}\\s+draft\\s+0/2`, 'm'));

    const start = await svc('missions', 'start', mission.id.slice(-5));
    expect(start.code, start.stderr).toBe(0);
    expect(start.stdout).toContain('is now active: pending 2 (0/2 done)');

    const show = await svc('missions', 'show', mission.id);
    expect(show.stdout).toMatch(/status\s+active/);
    expect(show.stdout).toMatch(/progress\s+pending 2 \(0\/2 done\)/);
    expect(show.stdout).toContain(mission.tasks[0].id.slice(-8));

    expect((await svc('missions', 'pause', mission.id)).stdout).toContain('is now paused');
    const again = await svc('missions', 'pause', mission.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/invalid_transition \(409\).*from paused to paused/);
    expect((await svc('missions', 'resume', mission.id)).stdout).toContain('is now active');
    expect((await svc('missions', 'cancel', mission.id)).stdout).toContain('is now cancelled');

    const rm = await svc('missions', 'rm', mission.id, '--cascade', '--yes');
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stdout).toContain('and its 2 tasks');
    expect((await d.api('GET', `/api/v1/tasks/${mission.tasks[0].id}`)).status).toBe(404);

    const missing = await svc('missions', 'add', join(d.root, 'nope.json'));
    expect(missing.code).toBe(2);

    // An empty YAML file reads as null: refused here (exit 2), as `playbooks add` does, not sent to the API (exit 1).
    const emptyFile = join(d.root, 'empty.yaml');
    writeFileSync(emptyFile, '');
    const empty = await svc('missions', 'add', emptyFile);
    expect(empty.code, empty.stderr).toBe(2);
    expect(empty.stderr).toContain('must hold an object');
  });
});
