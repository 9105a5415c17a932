import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../src/kernel/errors.js';
import type { Task } from '../src/resources/tasks/schema.js';
import { TASK_HOOKS, type TaskTransition } from '../src/resources/tasks/hooks.js';
import { transitionTask } from '../src/resources/tasks/service.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { runCase, type ApiCase } from './scenarios.js';

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
  for (const name of ['ana', 'bob']) expect((await d.api('POST', '/api/v1/agents', { body: { name } })).status).toBe(201);
});
afterAll(async () => {
  await d.close();
});

const eventsAfter = async (id: number) => (await d.daemon.app.events.since(id, 1000)).map((e) => ({ name: e.name, data: e.data }));
const lastEventId = async () => await d.daemon.app.events.lastId();
const hooks = () => d.daemon.app.services.get(TASK_HOOKS);

async function createTask(body: Record<string, unknown>): Promise<any> {
  const res = await d.api('POST', '/api/v1/tasks', { body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

// Ids of tasks made by earlier cases, by the name the case saved them under.
const ids: Record<string, string> = {};
const t = (key: string) => `/api/v1/tasks/${ids[key]}`;

interface Case extends ApiCase {
  /** Keep the created task's id under this name for later cases. */
  save?: string;
}

const created =
  (key: string, title: string, status: string, extra: Record<string, unknown> = {}) =>
  () => [{ name: 'task:created', data: { taskId: ids[key], title, status, assignTo: null, missionId: null, ...extra } }];
const moved = (key: string, from: string, to: string, reason?: string) => ({
  name: 'task:transition',
  data: reason === undefined ? { taskId: ids[key], from, to } : { taskId: ids[key], from, to, reason },
});

// Order matters: each case runs against the state the previous ones left.
const cases: Case[] = [
  {
    name: 'create pending with defaults',
    method: 'POST',
    path: '/api/v1/tasks',
    body: { title: 'write spec', priority: 'high', labels: ['docs', 'docs', 'api'] },
    status: 201,
    dataMatches: {
      title: 'write spec',
      description: null,
      status: 'pending',
      priority: 'high',
      labels: ['docs', 'api'],
      dependsOn: [],
      assignTo: null,
      missionId: null,
      retries: 0,
      maxRetries: 3,
      sideEffects: false,
      result: null,
      revisionCount: 0,
    },
    save: 'A',
    events: created('A', 'write spec', 'pending'),
  },
  {
    name: 'create draft depending on A',
    method: 'POST',
    path: '/api/v1/tasks',
    body: () => ({ title: 'build it', description: 'the thing', draft: true, dependsOn: [ids.A, ids.A], assignTo: 'ana', sideEffects: true, maxRetries: 1 }),
    status: 201,
    dataMatches: () => ({ status: 'draft', dependsOn: [ids.A], assignTo: 'ana', missionId: null, sideEffects: true, maxRetries: 1, priority: 'normal' }),
    save: 'B',
    events: created('B', 'build it', 'draft', { assignTo: 'ana' }),
  },
  { name: 'unknown mission', method: 'POST', path: '/api/v1/tasks', body: { title: 'x', missionId: 'm-1' }, status: 422, code: 'unprocessable', detailPath: 'body.missionId', events: [] },
  {
    name: 'unknown dependency',
    method: 'POST',
    path: '/api/v1/tasks',
    body: { title: 'x', dependsOn: ['0190f000-0000-7000-8000-000000000000'] },
    status: 422,
    code: 'unprocessable',
    detailPath: 'body.dependsOn',
    events: [],
  },
  { name: 'unknown assignee', method: 'POST', path: '/api/v1/tasks', body: { title: 'x', assignTo: 'ghost' }, status: 422, code: 'unprocessable', detailPath: 'body.assignTo', events: [] },
  { name: 'title missing', method: 'POST', path: '/api/v1/tasks', body: { description: 'x' }, status: 400, code: 'invalid_request', detailPath: 'body.title', events: [] },
  { name: 'blank title', method: 'POST', path: '/api/v1/tasks', body: { title: '   ' }, status: 400, code: 'invalid_request', detailPath: 'body.title', events: [] },
  { name: 'unknown property', method: 'POST', path: '/api/v1/tasks', body: { title: 'x', colour: 'blue' }, status: 400, code: 'invalid_request', detailPath: 'body.colour', events: [] },
  { name: 'status is not an input', method: 'POST', path: '/api/v1/tasks', body: { title: 'x', status: 'done' }, status: 400, code: 'invalid_request', detailPath: 'body.status', events: [] },
  { name: 'priority enum', method: 'POST', path: '/api/v1/tasks', body: { title: 'x', priority: 'extreme' }, status: 400, code: 'invalid_request', detailPath: 'body.priority', events: [] },
  { name: 'maxRetries negative', method: 'POST', path: '/api/v1/tasks', body: { title: 'x', maxRetries: -1 }, status: 400, code: 'invalid_request', detailPath: 'body.maxRetries', events: [] },
  { name: 'labels not strings', method: 'POST', path: '/api/v1/tasks', body: { title: 'x', labels: [1] }, status: 400, code: 'invalid_request', detailPath: 'body.labels.0', events: [] },
  { name: 'show A', method: 'GET', path: () => t('A'), status: 200, dataMatches: () => ({ id: ids.A, status: 'pending' }), events: [] },
  { name: 'show unknown', method: 'GET', path: '/api/v1/tasks/nope', status: 404, code: 'not_found', events: [] },
  { name: 'patch refuses status', method: 'PATCH', path: () => t('A'), body: { status: 'done' }, status: 400, code: 'invalid_request', detailPath: 'body.status', message: /transition/, events: [] },
  {
    name: 'patch title and clear labels',
    method: 'PATCH',
    path: () => t('A'),
    body: { title: 'write the spec', labels: null },
    status: 200,
    dataMatches: { title: 'write the spec', labels: [], priority: 'high', status: 'pending' },
    events: () => [{ name: 'task:updated', data: { taskId: ids.A, fields: ['title', 'labels'] } }],
  },
  {
    name: 'patch dependency cycle',
    method: 'PATCH',
    path: () => t('A'),
    body: () => ({ dependsOn: [ids.B] }),
    status: 422,
    code: 'unprocessable',
    detailPath: 'body.dependsOn',
    message: /cycle/,
    events: [],
  },
  { name: 'patch self dependency', method: 'PATCH', path: () => t('A'), body: () => ({ dependsOn: [ids.A] }), status: 422, code: 'unprocessable', detailPath: 'body.dependsOn', events: [] },
  { name: 'patch unknown assignee', method: 'PATCH', path: () => t('A'), body: { assignTo: 'ghost' }, status: 422, code: 'unprocessable', detailPath: 'body.assignTo', events: [] },
  { name: 'patch missionId is not allowed', method: 'PATCH', path: () => t('A'), body: { missionId: 'm-2' }, status: 400, code: 'invalid_request', detailPath: 'body.missionId', events: [] },
  { name: 'empty patch changes nothing', method: 'PATCH', path: () => t('A'), body: {}, status: 200, dataMatches: { title: 'write the spec' }, events: [] },
  { name: 'patch unknown task', method: 'PATCH', path: '/api/v1/tasks/nope', body: { title: 'y' }, status: 404, code: 'not_found', events: [] },
  {
    name: 'illegal move names both states',
    method: 'POST',
    path: () => `${t('B')}/transition`,
    body: { to: 'in_progress' },
    status: 409,
    code: 'invalid_transition',
    message: /from draft to in_progress/,
    events: [],
  },
  { name: 'unknown state', method: 'POST', path: () => `${t('B')}/transition`, body: { to: 'started' }, status: 400, code: 'invalid_request', detailPath: 'body.to', events: [] },
  {
    name: 'draft → pending',
    method: 'POST',
    path: () => `${t('B')}/transition`,
    body: { to: 'pending' },
    status: 200,
    dataMatches: { status: 'pending' },
    events: () => [moved('B', 'draft', 'pending')],
  },
  {
    name: 'pending → assigned with reason',
    method: 'POST',
    path: () => `${t('B')}/transition`,
    body: { to: 'assigned', reason: 'ready' },
    status: 200,
    dataMatches: { status: 'assigned' },
    events: () => [moved('B', 'pending', 'assigned', 'ready')],
  },
  { name: 'open dependency blocks in_progress', method: 'POST', path: () => `${t('B')}/transition`, body: { to: 'in_progress' }, status: 409, code: 'conflict', message: /dependencies/, events: [] },
  { name: 'claim held by another agent', method: 'POST', path: () => `${t('B')}/claim`, body: { agent: 'bob' }, status: 409, code: 'conflict', message: /ana/, events: [] },
  { name: 'expectedFrom mismatch', method: 'POST', path: () => `${t('A')}/transition`, body: { to: 'awaiting_approval', expectedFrom: 'assigned' }, status: 409, code: 'conflict', events: [] },
  {
    name: 'result only with review/done/failed',
    method: 'POST',
    path: () => `${t('A')}/transition`,
    body: { to: 'assigned', result: 'x' },
    status: 400,
    code: 'invalid_request',
    detailPath: 'body.result',
    events: [],
  },
  {
    name: 'transition body is strict',
    method: 'POST',
    path: () => `${t('A')}/transition`,
    body: { to: 'assigned', force: true },
    status: 400,
    code: 'invalid_request',
    detailPath: 'body.force',
    events: [],
  },
  { name: 'transition unknown task', method: 'POST', path: '/api/v1/tasks/nope/transition', body: { to: 'assigned' }, status: 404, code: 'not_found', events: [] },
  { name: 'claim by unknown agent', method: 'POST', path: () => `${t('A')}/claim`, body: { agent: 'ghost' }, status: 422, code: 'unprocessable', detailPath: 'body.agent', events: [] },
  { name: 'claim needs an agent', method: 'POST', path: () => `${t('A')}/claim`, body: {}, status: 400, code: 'invalid_request', detailPath: 'body.agent', events: [] },
  {
    name: 'claim a pending task: two legal moves and a claim',
    method: 'POST',
    path: () => `${t('A')}/claim`,
    body: { agent: 'bob' },
    status: 200,
    dataMatches: { status: 'in_progress', assignTo: 'bob' },
    events: () => [moved('A', 'pending', 'assigned', 'claimed by bob'), moved('A', 'assigned', 'in_progress', 'claimed by bob'), { name: 'task:claimed', data: { taskId: ids.A, agent: 'bob' } }],
  },
  { name: 'claim again', method: 'POST', path: () => `${t('A')}/claim`, body: { agent: 'bob' }, status: 409, code: 'conflict', message: /in_progress/, events: [] },
  {
    name: 'in_progress → review',
    method: 'POST',
    path: () => `${t('A')}/transition`,
    body: { to: 'review', expectedFrom: 'in_progress' },
    status: 200,
    events: () => [moved('A', 'in_progress', 'review')],
  },
  {
    name: 'review → done with a result',
    method: 'POST',
    path: () => `${t('A')}/transition`,
    body: { to: 'done', result: { pr: 12, ok: true } },
    status: 200,
    dataMatches: { status: 'done', result: { pr: 12, ok: true } },
    events: () => [moved('A', 'review', 'done')],
  },
  { name: 'done is terminal', method: 'POST', path: () => `${t('A')}/transition`, body: { to: 'pending' }, status: 409, code: 'invalid_transition', message: /from done to pending/, events: [] },
  { name: 'retry a done task', method: 'POST', path: () => `${t('A')}/retry`, status: 409, code: 'invalid_transition', message: /done/, events: [] },
  { name: 'dependency done: in_progress allowed', method: 'POST', path: () => `${t('B')}/transition`, body: { to: 'in_progress' }, status: 200, events: () => [moved('B', 'assigned', 'in_progress')] },
  {
    name: 'fail with a text result',
    method: 'POST',
    path: () => `${t('B')}/transition`,
    body: { to: 'failed', result: 'tests red' },
    status: 200,
    dataMatches: { status: 'failed', result: 'tests red' },
    events: () => [moved('B', 'in_progress', 'failed')],
  },
  {
    name: 'retry counts one',
    method: 'POST',
    path: () => `${t('B')}/retry`,
    status: 200,
    dataMatches: { status: 'pending', retries: 1, result: 'tests red' },
    events: () => [moved('B', 'failed', 'pending', 'retry')],
  },
  { name: 'retry a pending task', method: 'POST', path: () => `${t('B')}/retry`, status: 409, code: 'invalid_transition', message: /pending/, events: [] },
  {
    name: 'claim B as its assignee',
    method: 'POST',
    path: () => `${t('B')}/claim`,
    body: { agent: 'ana' },
    status: 200,
    dataMatches: { status: 'in_progress', assignTo: 'ana' },
    events: () => [moved('B', 'pending', 'assigned', 'claimed by ana'), moved('B', 'assigned', 'in_progress', 'claimed by ana'), { name: 'task:claimed', data: { taskId: ids.B, agent: 'ana' } }],
  },
  // Its last retry used, the task needs a person (attention:needed, test/notify.test.ts); the first failure did not.
  {
    name: 'fail B again',
    method: 'POST',
    path: () => `${t('B')}/transition`,
    body: { to: 'failed' },
    status: 200,
    events: () => [moved('B', 'in_progress', 'failed'), { name: 'attention:needed', data: expect.objectContaining({ reason: 'failed', taskId: ids.B, runId: null }) }],
  },
  { name: 'retries used up (retry)', method: 'POST', path: () => `${t('B')}/retry`, status: 409, code: 'conflict', message: /retries/, events: [] },
  { name: 'retries used up (transition)', method: 'POST', path: () => `${t('B')}/transition`, body: { to: 'pending' }, status: 409, code: 'conflict', message: /retries/, events: [] },
  {
    name: 'raise maxRetries',
    method: 'PATCH',
    path: () => t('B'),
    body: { maxRetries: 2 },
    status: 200,
    dataMatches: { maxRetries: 2, retries: 1 },
    events: () => [{ name: 'task:updated', data: { taskId: ids.B, fields: ['maxRetries'] } }],
  },
  {
    name: 'failed → pending by transition counts a retry',
    method: 'POST',
    path: () => `${t('B')}/transition`,
    body: { to: 'pending' },
    status: 200,
    dataMatches: { status: 'pending', retries: 2 },
    events: () => [moved('B', 'failed', 'pending')],
  },
  {
    name: 'delete A: B loses the dependency',
    method: 'DELETE',
    path: () => t('A'),
    status: 200,
    data: { removed: true },
    events: () => [
      { name: 'task:removed', data: { taskId: ids.A } },
      { name: 'task:updated', data: { taskId: ids.B, fields: ['dependsOn'] } },
    ],
  },
  { name: 'delete A again', method: 'DELETE', path: () => t('A'), status: 404, code: 'not_found', events: [] },
  { name: 'B has no dependency left', method: 'GET', path: () => t('B'), status: 200, dataMatches: { dependsOn: [] }, events: [] },
  { name: 'list: unknown query field', method: 'GET', path: '/api/v1/tasks?colour=red', status: 400, code: 'invalid_request', detailPath: 'query.colour', events: [] },
  { name: 'list: limit 0', method: 'GET', path: '/api/v1/tasks?limit=0', status: 400, code: 'invalid_request', detailPath: 'query.limit', events: [] },
  { name: 'list: limit 201', method: 'GET', path: '/api/v1/tasks?limit=201', status: 400, code: 'invalid_request', detailPath: 'query.limit', events: [] },
  { name: 'list: bad cursor', method: 'GET', path: '/api/v1/tasks?cursor=abc', status: 400, code: 'invalid_request', detailPath: 'query.cursor', events: [] },
  { name: 'list: bad status', method: 'GET', path: '/api/v1/tasks?status=started', status: 400, code: 'invalid_request', detailPath: 'query.status', events: [] },
];

describe('tasks', () => {
  it.each(cases.map((c, i) => [i, c.name, c] as const))('%i %s', async (_i, _n, c) => {
    await runCase(d, { ...c, onSuccess: (data) => c.save && (ids[c.save] = data.id) });
  });

  it('returns every field of a task, with ISO timestamps', async () => {
    const task = await createTask({ title: 'fields' });
    expect(Object.keys(task).sort()).toEqual(
      [
        'id',
        'title',
        'description',
        'assignTo',
        'missionId',
        'dependsOn',
        'status',
        'priority',
        'labels',
        'retries',
        'maxRetries',
        'sideEffects',
        'result',
        'revisionCount',
        'leaseExpiresAt',
        'createdAt',
        'updatedAt',
      ].sort(),
    );
    expect(task.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(task.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
  });
});

describe('listing', () => {
  let mission = '';
  const made: any[] = [];
  beforeAll(async () => {
    mission = (await d.api('POST', '/api/v1/missions', { body: { name: 'list' } })).body.data.id;
    for (let i = 0; i < 7; i++) made.push(await createTask({ title: `page ${i}`, missionId: mission, assignTo: i % 2 ? 'ana' : 'bob' }));
    // Its tasks joined it in draft; starting it releases them so two can be claimed.
    expect((await d.api('POST', `/api/v1/missions/${mission}/start`)).status).toBe(200);
    await d.api('POST', `/api/v1/tasks/${made[0].id}/claim`, { body: { agent: 'bob' } });
    await d.api('POST', `/api/v1/tasks/${made[1].id}/claim`, { body: { agent: 'ana' } });
  });

  async function allPages(path: string, limit: number): Promise<{ pages: string[][]; cursors: (string | null)[] }> {
    const pages: string[][] = [];
    const cursors: (string | null)[] = [];
    let cursor: string | null = null;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const res = await d.api('GET', `${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      pages.push(res.body.data.map((x: { id: string }) => x.id));
      cursor = res.headers.get('x-next-cursor');
      cursors.push(cursor);
    } while (cursor && pages.length < 20);
    return { pages, cursors };
  }

  it('pages newest first with X-Next-Cursor, absent on the last page', async () => {
    const { pages, cursors } = await allPages(`/api/v1/tasks?missionId=${mission}`, 3);
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(cursors[2]).toBeNull();
    expect(pages.flat()).toEqual(made.map((x) => x.id).reverse());
  });

  it('a page that ends exactly at the last task has no cursor', async () => {
    const { pages, cursors } = await allPages(`/api/v1/tasks?missionId=${mission}`, 7);
    expect(pages).toHaveLength(1);
    expect(cursors).toEqual([null]);
  });

  it('the reconciliation path /v1/tasks answers the same', async () => {
    const a = await allPages(`/api/v1/tasks?missionId=${mission}`, 4);
    const b = await allPages(`/v1/tasks?missionId=${mission}`, 4);
    expect(b).toEqual(a);
  });

  it('the default page is 50', async () => {
    for (let i = 0; i < 45; i++) await createTask({ title: `bulk ${i}`, labels: ['bulk'] });
    const res = await d.api('GET', '/api/v1/tasks');
    expect(res.body.data).toHaveLength(50);
    expect(res.headers.get('x-next-cursor')).toBe(res.body.data[49].id);
  });

  it('filters by status, assignTo and missionId, combined with AND', async () => {
    const ids = (r: any) => r.body.data.map((x: { id: string }) => x.id);
    const byMissionAndAgent = await d.api('GET', `/api/v1/tasks?missionId=${mission}&assignTo=ana`);
    expect(ids(byMissionAndAgent)).toEqual([made[5], made[3], made[1]].map((x) => x.id));
    const inProgress = await d.api('GET', `/api/v1/tasks?missionId=${mission}&status=in_progress`);
    expect(ids(inProgress)).toEqual([made[1].id, made[0].id]);
    const all3 = await d.api('GET', `/api/v1/tasks?missionId=${mission}&status=in_progress&assignTo=bob`);
    expect(ids(all3)).toEqual([made[0].id]);
    const none = await d.api('GET', '/api/v1/tasks?missionId=nothing-here');
    expect(none.body.data).toEqual([]);
    expect(none.headers.get('x-next-cursor')).toBeNull();
  });
});

describe('claims', () => {
  it('of two concurrent claims exactly one wins', async () => {
    for (let round = 0; round < 5; round++) {
      const task = await createTask({ title: `race ${round}` });
      const before = await lastEventId();
      const [a, b] = await Promise.all(['ana', 'bob'].map((agent) => d.api('POST', `/api/v1/tasks/${task.id}/claim`, { body: { agent } })));
      expect([a!.status, b!.status].sort()).toEqual([200, 409]);
      const winner = a!.status === 200 ? a! : b!;
      const loser = a!.status === 200 ? b! : a!;
      expect(loser.body.code).toBe('conflict');
      const claimed = (await eventsAfter(before)).filter((e) => e.name === 'task:claimed');
      expect(claimed).toEqual([{ name: 'task:claimed', data: { taskId: task.id, agent: winner.body.data.assignTo } }]);
      const now = await d.api('GET', `/api/v1/tasks/${task.id}`);
      expect(now.body.data).toMatchObject({ status: 'in_progress', assignTo: winner.body.data.assignTo });
    }
  });

  it('over two separate connections whose requests really interleave, exactly one wins', async () => {
    // Two clients, one connection each. Each sends its request head and half its body, then waits
    // until the other has done the same: both requests are open on the server at once, and both
    // bodies complete in the same tick, so the server reads the two claims in whichever order the
    // bytes arrive.
    const clients = [new Client(d.url), new Client(d.url)];
    const auth = { authorization: `Bearer ${d.key}` };
    try {
      for (const c of clients) expect((await c.request({ path: '/api/v1/tasks?limit=1', method: 'GET', headers: auth })).statusCode).toBe(200);
      for (let round = 0; round < 10; round++) {
        const task = await createTask({ title: `interleaved ${round}` });
        const before = await lastEventId();
        let halves = 0;
        let release!: () => void;
        const released = new Promise<void>((r) => (release = r));
        const claim = (client: Client, agent: string) => {
          const body = Buffer.from(JSON.stringify({ agent }));
          async function* chunks() {
            yield body.subarray(0, 8);
            if (++halves === 2) release();
            await released;
            yield body.subarray(8);
          }
          return client.request({
            path: `/api/v1/tasks/${task.id}/claim`,
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json', 'content-length': String(body.length) },
            body: chunks(),
          });
        };
        let answered = 0;
        const pending = [claim(clients[0]!, 'ana'), claim(clients[1]!, 'bob')].map((p) => p.then((r) => (answered++, r)));
        await released;
        // Both requests are in flight, neither answered: no body was complete yet.
        expect(answered).toBe(0);
        const results = await Promise.all(
          pending.map(async (p) => {
            const r = await p;
            return { status: r.statusCode, body: (await r.body.json()) as any };
          }),
        );
        expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
        const winner = results.find((r) => r.status === 200)!;
        expect(results.find((r) => r.status === 409)!.body.code).toBe('conflict');
        expect((await eventsAfter(before)).filter((e) => e.name === 'task:claimed')).toEqual([{ name: 'task:claimed', data: { taskId: task.id, agent: winner.body.data.assignTo } }]);
        expect((await eventsAfter(before)).filter((e) => e.name === 'task:transition')).toHaveLength(2);
        expect((await d.api('GET', `/api/v1/tasks/${task.id}`)).body.data).toMatchObject({ status: 'in_progress', assignTo: winner.body.data.assignTo });
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it('a claim blocked by a dependency changes nothing: no half-done pending → assigned', async () => {
    const dep = await createTask({ title: 'first' });
    const task = await createTask({ title: 'second', dependsOn: [dep.id] });
    const before = await lastEventId();
    const res = await d.api('POST', `/api/v1/tasks/${task.id}/claim`, { body: { agent: 'ana' } });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('conflict');
    expect(res.body.error).toContain(dep.id);
    expect(await eventsAfter(before)).toEqual([]);
    const now = await d.api('GET', `/api/v1/tasks/${task.id}`);
    expect(now.body.data).toMatchObject({ status: 'pending', assignTo: null });
  });

  it('draft, review and done tasks cannot be claimed', async () => {
    const draft = await createTask({ title: 'draft', draft: true });
    const res = await d.api('POST', `/api/v1/tasks/${draft.id}/claim`, { body: { agent: 'ana' } });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/draft/);
  });
});

describe('in_progress → done, as the reference lists it', () => {
  it('is legal by default: one task:transition {taskId, from, to}, the result kept, the lease ended', async () => {
    const task = await createTask({ title: 'small fix' });
    const claim = await d.api('POST', `/api/v1/tasks/${task.id}/claim`, { body: { agent: 'ana' } });
    expect(claim.status).toBe(200);
    const before = await lastEventId();
    const res = await d.api('POST', `/api/v1/tasks/${task.id}/transition`, { body: { to: 'done', expectedFrom: 'in_progress', leaseId: claim.body.data.leaseId, result: { ok: true } } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'done', result: { ok: true }, leaseExpiresAt: null });
    expect(await eventsAfter(before)).toEqual([{ name: 'task:transition', data: { taskId: task.id, from: 'in_progress', to: 'done' } }]);
  });

  it('with tasks.requireReview it is a 409 naming the setting, and work goes through review', async () => {
    const strict = await startTestDaemon({ config: { tasks: { requireReview: true } } });
    try {
      const task = (await strict.api('POST', '/api/v1/tasks', { body: { title: 'reviewed work' } })).body.data;
      for (const to of ['assigned', 'in_progress']) expect((await strict.api('POST', `/api/v1/tasks/${task.id}/transition`, { body: { to } })).status).toBe(200);
      const before = await strict.daemon.app.events.lastId();
      const refused = await strict.api('POST', `/api/v1/tasks/${task.id}/transition`, { body: { to: 'done' } });
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('invalid_transition');
      expect(refused.body.error).toContain('tasks.requireReview');
      expect(refused.body.error).toContain('from in_progress to done');
      expect(await strict.daemon.app.events.since(before, 10)).toEqual([]);
      expect((await strict.api('GET', `/api/v1/tasks/${task.id}`)).body.data.status).toBe('in_progress');
      for (const to of ['review', 'done']) expect((await strict.api('POST', `/api/v1/tasks/${task.id}/transition`, { body: { to } })).status).toBe(200);
    } finally {
      await strict.close();
    }
  });
});

describe('transition listeners', () => {
  it('hear every transition, claims included, inside the transaction', async () => {
    const heard: TaskTransition[] = [];
    const off = hooks().onTransition(async (app, change) => {
      // Inside the write: the row already holds the new state.
      expect(await app.db.prepare('SELECT status FROM tasks WHERE id = ?').get(change.task.id)).toEqual({ status: change.to });
      heard.push(change);
    });
    try {
      const task = await createTask({ title: 'heard' });
      await d.api('POST', `/api/v1/tasks/${task.id}/claim`, { body: { agent: 'ana' } });
      expect(heard.map((h) => [h.task.id, h.from, h.to])).toEqual([
        [task.id, 'pending', 'assigned'],
        [task.id, 'assigned', 'in_progress'],
      ]);
      expect(heard[1]!.task.assignTo).toBe('ana');
    } finally {
      off();
    }
  });

  it('a listener that throws rolls the transition and its events back', async () => {
    const task = await createTask({ title: 'vetoed' });
    const off = hooks().onTransition((_app, change) => {
      if (change.task.id === task.id) throw new Error('veto');
    });
    try {
      const before = await lastEventId();
      const res = await d.api('POST', `/api/v1/tasks/${task.id}/transition`, { body: { to: 'assigned' } });
      expect(res.status).toBe(500);
      expect(await eventsAfter(before)).toEqual([]);
      expect((await d.api('GET', `/api/v1/tasks/${task.id}`)).body.data.status).toBe('pending');
    } finally {
      off();
    }
  });
});

describe('creation hooks', () => {
  it('run inside the transaction and may choose the status', async () => {
    const off = hooks().beforeCreate(async (app, input, status) => {
      // Before anything is written: the title is not on the board yet.
      expect(await app.db.prepare('SELECT count(*) AS n FROM tasks WHERE title = ?').get(input.title)).toEqual({ n: 0 });
      if (input.title === 'held back') return status === 'pending' ? 'draft' : status;
    });
    try {
      const before = await lastEventId();
      const task = await createTask({ title: 'held back' });
      expect(task.status).toBe('draft');
      expect(await eventsAfter(before)).toEqual([{ name: 'task:created', data: { taskId: task.id, title: 'held back', status: 'draft', assignTo: null, missionId: null } }]);
      expect((await createTask({ title: 'let through' })).status).toBe('pending');
    } finally {
      off();
    }
  });

  it('a hook that throws refuses the task: nothing written, nothing emitted', async () => {
    const off = hooks().beforeCreate((_app, input) => {
      if (input.title === 'refused') throw new AppError('conflict', 'not today');
    });
    try {
      const before = await lastEventId();
      const res = await d.api('POST', '/api/v1/tasks', { body: { title: 'refused' } });
      expect(res.status).toBe(409);
      expect(res.body.error).toBe('not today');
      expect(await eventsAfter(before)).toEqual([]);
      expect(await d.daemon.app.db.prepare("SELECT count(*) AS n FROM tasks WHERE title = 'refused'").get()).toEqual({ n: 0 });
    } finally {
      off();
    }
  });
});

describe('removal listeners', () => {
  it('hear the removed task inside the transaction, after the delete and its events', async () => {
    const dep = await createTask({ title: 'going' });
    const dependent = await createTask({ title: 'staying', dependsOn: [dep.id] });
    const heard: Task[] = [];
    const causes: string[] = [];
    const off = hooks().onRemoved(async (app, removed, cause) => {
      expect(await app.db.prepare('SELECT count(*) AS n FROM tasks WHERE id = ?').get(removed.id)).toEqual({ n: 0 });
      heard.push(removed);
      causes.push(cause);
    });
    try {
      const before = await lastEventId();
      expect((await d.api('DELETE', `/api/v1/tasks/${dep.id}`)).status).toBe(200);
      expect(heard.map((t) => [t.id, t.title, t.status])).toEqual([[dep.id, 'going', 'pending']]);
      expect(causes).toEqual(['task']);
      expect((await eventsAfter(before)).map((e) => e.name)).toEqual(['task:removed', 'task:updated']);
      expect((await d.api('GET', `/api/v1/tasks/${dependent.id}`)).body.data.dependsOn).toEqual([]);
    } finally {
      off();
    }
  });

  it('a listener that throws rolls the removal and its events back', async () => {
    const task = await createTask({ title: 'kept' });
    const off = hooks().onRemoved((_app, removed) => {
      if (removed.id === task.id) throw new AppError('conflict', 'keep it');
    });
    try {
      const before = await lastEventId();
      const res = await d.api('DELETE', `/api/v1/tasks/${task.id}`);
      expect(res.status).toBe(409);
      expect(await eventsAfter(before)).toEqual([]);
      expect((await d.api('GET', `/api/v1/tasks/${task.id}`)).status).toBe(200);
    } finally {
      off();
    }
  });
});

describe('service functions for other resources', () => {
  it('a revision appends feedback to the description and counts one', async () => {
    const task = await createTask({ title: 'revise me', description: 'first draft' });
    // Where an approval request would put it (the request itself is approvals' business).
    await d.daemon.app.db.prepare("UPDATE tasks SET status = 'awaiting_approval' WHERE id = ?").run(task.id);
    const before = await lastEventId();
    const after = await transitionTask(d.daemon.app, task.id, 'pending', { revision: 'Feedback: shorter, please.', reason: 'rejected' });
    expect(after).toMatchObject({ status: 'pending', revisionCount: 1, description: 'first draft\n\nFeedback: shorter, please.' });
    expect(await eventsAfter(before)).toEqual([{ name: 'task:transition', data: { taskId: task.id, from: 'awaiting_approval', to: 'pending', reason: 'rejected' } }]);
  });
});
