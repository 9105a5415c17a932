import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svcAgainst } from './cli-helpers.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
  expect((await d.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
}, 120_000);
afterAll(async () => {
  await d?.close();
});

const svc = async (...args: string[]) => await svcAgainst(d, args);

describe('svc tasks', () => {
  it('adds, lists, shows, edits, moves, claims, retries and removes', async () => {
    const add = await svc('tasks', 'add', 'ship the CLI', '--priority', 'high', '--label', 'cli', '--json');
    expect(add.code, add.stderr).toBe(0);
    const task = JSON.parse(add.stdout);
    expect(task).toMatchObject({ title: 'ship the CLI', status: 'pending', priority: 'high', labels: ['cli'] });

    const ls = await svc('tasks', 'ls');
    expect(ls.code).toBe(0);
    expect(ls.stdout).toMatch(/^ID\s+STATUS\s+PRIORITY\s+ASSIGNEE\s+UPDATED\s+LEASE\s+TITLE/);
    expect(ls.stdout).toContain(task.id.slice(-8));
    expect(ls.stdout).not.toContain(task.id);
    expect(ls.stdout).toMatch(/just now|\ds ago/);
    expect(ls.stdout).toContain('ship the CLI');

    const lsJson = await svc('tasks', 'ls', '--status', 'pending', '--json');
    expect(JSON.parse(lsJson.stdout).map((x: { id: string }) => x.id)).toContain(task.id);

    const edit = await svc('tasks', 'edit', task.id, '--title', 'ship the tasks CLI', '--unset', 'labels');
    expect(edit.code, edit.stderr).toBe(0);
    expect(edit.stdout).toContain(`updated title, labels; task ${task.id.slice(-8)} is now pending`);

    const show = await svc('tasks', 'show', task.id);
    expect(show.stdout).toMatch(/title\s+ship the tasks CLI/);
    expect(show.stdout).toMatch(/status\s+pending/);

    const claim = await svc('tasks', 'claim', task.id, '--agent', 'ana');
    expect(claim.code, claim.stderr).toBe(0);
    expect(claim.stdout).toContain(`claimed by ana; task ${task.id.slice(-8)} is now in_progress (ana); lease `);

    const illegal = await svc('tasks', 'mv', task.id, 'pending');
    expect(illegal.code).toBe(1);
    expect(illegal.stderr).toContain('invalid_transition');
    expect(illegal.stderr).toContain('from in_progress to pending');

    const fail = await svc('tasks', 'mv', task.id, 'failed', '--result', '{"exit":1}', '--json');
    expect(fail.code, fail.stderr).toBe(0);
    expect(JSON.parse(fail.stdout)).toMatchObject({ status: 'failed', result: { exit: 1 } });

    const retry = await svc('tasks', 'retry', task.id);
    expect(retry.code, retry.stderr).toBe(0);
    expect(retry.stdout).toContain('retry 1 of 3; task');

    const rm = await svc('tasks', 'rm', task.id, '--json', '--yes');
    expect(JSON.parse(rm.stdout)).toEqual({ removed: true });
    const gone = await svc('tasks', 'show', task.id);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('not_found');
  });

  it('shows the holder of a claimed task and how long its lease has left', async () => {
    const task = (await d.api('POST', '/api/v1/tasks', { body: { title: 'leased in the CLI', priority: 'high' } })).body.data;
    expect((await d.api('POST', `/api/v1/tasks/${task.id}/claim`, { body: { agent: 'ana' } })).status).toBe(200);
    const held = await svc('tasks', 'ls', '--status', 'in_progress');
    // Default lease: 15 minutes.
    expect(held.stdout).toMatch(new RegExp(`${task.id.slice(-8)}\\s+in_progress\\s+high\\s+ana\\s+(just now|\\d+s ago)\\s+15m left\\s+leased in the CLI`));
  });

  it('prints the next-page hint on stderr so --json stays one document', async () => {
    // A task may only join a mission that exists.
    const mission = (await d.api('POST', '/api/v1/missions', { body: { name: 'cli pages' } })).body.data.id as string;
    for (let i = 0; i < 3; i++) expect((await svc('tasks', 'add', `page ${i}`, '--mission', mission)).code).toBe(0);
    const page = await svc('tasks', 'ls', '--mission', mission, '--limit', '2', '--json');
    expect(JSON.parse(page.stdout)).toHaveLength(2);
    const next = /--cursor (\S+)/.exec(page.stderr)?.[1];
    expect(next).toBeDefined();
    const last = await svc('tasks', 'ls', '--mission', mission, '--limit', '2', '--cursor', next!, '--json');
    expect(JSON.parse(last.stdout).map((x: { title: string }) => x.title)).toEqual(['page 0']);
    expect(last.stderr).not.toContain('--cursor');
  });

  it('refuses usage errors with exit 2 before any request', async () => {
    expect((await svc('tasks', 'mv', 'some-id', 'started')).code).toBe(2);
    expect((await svc('tasks', 'claim', 'some-id')).code).toBe(2);
    expect((await svc('tasks', 'edit', 'some-id')).code).toBe(2);
  });
});
