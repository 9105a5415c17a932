import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { approvalTable, formatAge, formatRemaining, parseDuration } from '../src/resources/approvals/command.js';
import { askPermission } from '../src/resources/approvals/permissions.js';
import type { Approval } from '../src/resources/approvals/schema.js';
import { svcAgainst } from './cli-helpers.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

describe('svc approvals (child process)', () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon();
  }, 120_000);
  afterAll(async () => {
    await d?.close();
  });

  const svc = async (...args: string[]) => await svcAgainst(d, args);

  async function request(title: string, extra: Record<string, unknown> = {}): Promise<any> {
    const res = await d.api('POST', '/api/v1/approvals', { body: { requestedBy: 'ana', title, ...extra } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data;
  }

  it('lists, shows, approves and rejects', async () => {
    const empty = await svc('approvals', 'ls');
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toContain('(no approval requests)');

    const task = (await d.api('POST', '/api/v1/tasks', { body: { title: 'deploy', description: 'ship v2' } })).body.data;
    const gate = await request('deploy to prod?', { taskId: task.id, timeoutSeconds: 3600 });
    const other = await request('spend $20?');

    const ls = await svc('approvals', 'ls');
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(/^ID\s+STATUS\s+AGE\s+TASK\s+REQUESTED BY\s+TIMEOUT\s+TITLE/);
    // Short ids (the random end of each id), never the full ones.
    const row = ls.stdout.split('\n').find((l) => l.startsWith(gate.id.slice(-8)))!;
    expect(row).toMatch(new RegExp(`^${gate.id.slice(-8)}\\s+pending\\s+\\d+s\\s+${task.id.slice(-8)}\\s+ana\\s+reject in 1h\\s+deploy to prod\\?$`));
    expect(ls.stdout).not.toContain(gate.id);
    // NO_COLOR: no escape codes, even for pending rows.
    expect(ls.stdout).not.toContain('\x1b[');

    // A short id works, and the answer says where the decision left the task.
    const approve = await svc('approvals', 'approve', gate.id.slice(-6), '--note', 'ok', '--by', 'lead');
    expect(approve.code, approve.stderr).toBe(0);
    expect(approve.stdout).toBe(`approved ${gate.id.slice(-8)}; task ${task.id.slice(-8)} is now assigned\n`);
    expect((await d.api('GET', `/api/v1/tasks/${task.id}`)).body.data.status).toBe('assigned');

    const show = await svc('approvals', 'show', gate.id);
    expect(show.stdout).toMatch(/status\s+approved/);
    expect(show.stdout).toMatch(/resolvedBy\s+lead/);
    expect(show.stdout).toMatch(/note\s+ok/);

    const again = await svc('approvals', 'approve', gate.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('conflict (409)');

    const noFeedback = await svc('approvals', 'reject', other.id);
    expect(noFeedback.code).toBe(2);
    expect(noFeedback.stderr).toContain('--feedback');

    const reject = await svc('approvals', 'reject', other.id, '--feedback', 'too much', '--json');
    expect(reject.code, reject.stderr).toBe(0);
    expect(JSON.parse(reject.stdout)).toMatchObject({ id: other.id, status: 'rejected', feedback: 'too much' });

    const approved = await svc('approvals', 'ls', '--status', 'approved', '--json');
    expect(JSON.parse(approved.stdout).map((a: Approval) => a.id)).toEqual([gate.id]);

    const badStatus = await svc('approvals', 'ls', '--status', 'open');
    expect(badStatus.code).toBe(2);
  });

  it("lists a run's permission requests by kind and run; approve --always allows the tool for good; a gate refuses --always", async () => {
    expect((await d.api('POST', '/api/v1/agents', { body: { name: 'cody' } })).status).toBe(201);
    const task = (await d.api('POST', '/api/v1/tasks', { body: { title: 'test it' } })).body.data;
    const runId = '01900000-0000-7000-8000-00000000beef';
    // What the permission_prompt tool records when a run's Claude Code asks (tools/permissions.ts).
    const asked = await askPermission(
      d.daemon.app,
      { runId, taskId: task.id, missionId: null, agent: 'cody', tool: 'Bash', input: { command: 'npm test' }, toolUseId: 'toolu_1' },
      { timeoutSec: 900, timeoutAction: 'reject', secrets: [] },
    );
    const ls = await svc('approvals', 'ls', '--kind', 'permission', '--run', runId);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout.split('\n')[1]).toMatch(new RegExp(`^${asked.id.slice(-8)}\\s+pending\\s+\\d+s\\s+${task.id.slice(-8)}\\s+cody\\s+reject in 15m\\s+cody wants to run Bash: npm test$`));
    expect((await svc('approvals', 'ls', '--kind', 'task', '--json')).stdout).not.toContain(asked.id);
    expect((await svc('approvals', 'ls', '--kind', 'gate')).code).toBe(2);

    const approve = await svc('approvals', 'approve', asked.id.slice(-6), '--always');
    expect(approve.code, approve.stderr).toBe(0);
    expect(approve.stdout).toBe(`approved ${asked.id.slice(-8)}; run ${runId.slice(-8)} goes on with Bash, and cody may use Bash from now on (allowedTools)\n`);
    expect((await d.api('GET', '/api/v1/agents/cody')).body.data.allowedTools).toEqual(['Bash']);

    const gate = await request('merge it?', { taskId: task.id });
    const refused = await svc('approvals', 'approve', gate.id, '--always');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/--always: approval .* gates a task/);
  });
});

describe('svc approvals request', () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon();
  }, 120_000);
  afterAll(async () => {
    await d?.close();
  });
  const svc = async (...args: string[]) => await svcAgainst(d, args);

  it('puts a task in awaiting_approval with a timeout; refuses bad durations and a lone --on-timeout as usage errors', async () => {
    const task = (await d.api('POST', '/api/v1/tasks', { body: { title: 'ship it' } })).body.data;
    const out = await svc('approvals', 'request', task.id, '--title', 'ship v2?', '--reason', 'touches billing', '--by', 'ana', '--timeout', '1h30m', '--on-timeout', 'approve', '--json');
    expect(out.code, out.stderr).toBe(0);
    const a = JSON.parse(out.stdout);
    expect(a).toMatchObject({ taskId: task.id, title: 'ship v2?', reason: 'touches billing', requestedBy: 'ana', status: 'pending', timeoutAction: 'approve', taskFrom: 'pending' });
    expect(Date.parse(a.expiresAt) - Date.parse(a.createdAt)).toBe(5400_000);
    expect((await d.api('GET', `/api/v1/tasks/${task.id}`)).body.data.status).toBe('awaiting_approval');

    const other = (await d.api('POST', '/api/v1/tasks', { body: { title: 'plain' } })).body.data;
    const human = await svc('approvals', 'request', other.id, '--title', 'ok?', '--timeout', '10m');
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^requested \\S{8}; task ${other.id.slice(-8)} is now awaiting_approval; reject automatically in 10m\\n$`));

    for (const args of [
      ['--title', 'x', '--timeout', 'soon'],
      ['--title', 'x', '--timeout', '0s'],
      ['--title', 'x', '--on-timeout', 'approve'],
      ['--title', 'x', '--timeout', '1h', '--on-timeout', 'maybe'],
      [],
    ]) {
      const bad = await svc('approvals', 'request', task.id, ...args);
      expect(bad.code, `${args.join(' ')}: ${bad.stderr}`).toBe(2);
    }

    // A task already waiting cannot be asked about again: the API's 409, exit code 1.
    const done = await svc('approvals', 'request', task.id, '--title', 'again?');
    expect(done.code).toBe(1);
    expect(done.stderr).toContain('409');
  });
});

describe('parseDuration', () => {
  it.each([
    ['90', 90],
    ['90s', 90],
    ['15m', 900],
    ['1h', 3600],
    ['1h30m', 5400],
    ['2d', 172_800],
  ])('%s → %i s', (text, seconds) => expect(parseDuration(text)).toBe(seconds));

  it.each(['', 'soon', '1.5h', '-1h', '1h30', '0', '0m', '400d', '1w'])('refuses %j', (text) => expect(() => parseDuration(text)).toThrow());
});

describe('approvals table', () => {
  const saved = { isTTY: process.stdout.isTTY, noColor: process.env.NO_COLOR };
  afterEach(() => {
    process.stdout.isTTY = saved.isTTY;
    if (saved.noColor === undefined) delete process.env.NO_COLOR;
    else process.env.NO_COLOR = saved.noColor;
  });

  const now = Date.parse('2030-01-01T12:00:00.000Z');
  const approval = (id: string, status: Approval['status'], ageMs: number): Approval => ({
    id,
    taskId: null,
    missionId: null,
    requestedBy: 'ana',
    title: `title ${id}`,
    reason: null,
    payload: null,
    status,
    timeoutAction: null,
    expiresAt: null,
    taskFrom: null,
    note: null,
    feedback: null,
    resolvedBy: null,
    resolvedAt: null,
    timedOut: false,
    createdAt: new Date(now - ageMs).toISOString(),
    updatedAt: new Date(now - ageMs).toISOString(),
  });

  it('highlights pending rows on a TTY, whole lines so columns stay aligned', () => {
    process.stdout.isTTY = true;
    delete process.env.NO_COLOR;
    const lines = approvalTable([approval('p1', 'pending', 3 * 60_000), approval('a1', 'approved', 2 * 3600_000)], now).split('\n');
    expect(lines[1]).toMatch(/^\x1b\[33mp1\s+pending\s+3m\s.*\x1b\[39m$/);
    expect(lines[2]).toMatch(/^a1\s+approved\s+2h\s/);
    // eslint-disable-next-line no-control-regex
    const plain = (s: string) => s.replace(/\x1b\[\d+m/g, '');
    expect(plain(lines[1]!).indexOf('title p1')).toBe(plain(lines[2]!).indexOf('title a1'));
  });

  it.each([
    [0, '0s'],
    [59_999, '59s'],
    [60_000, '1m'],
    [3 * 60_000 + 5_000, '3m'],
    [3600_000 - 1, '59m'],
    [2 * 3600_000, '2h'],
    [47 * 3600_000, '47h'],
    [48 * 3600_000, '2d'],
    [-5_000, '0s'],
  ])('formatAge(%i) = %s', (ms, text) => {
    expect(formatAge(ms)).toBe(text);
  });

  it.each([
    [599_000, '10m'],
    [59_000, '59s'],
    [59_500, '1m'],
    [60_000, '1m'],
    [60_001, '2m'],
    [1, '1s'],
    [3600_000, '1h'],
    [3599_000, '1h'],
    [47 * 3600_000, '47h'],
    [47 * 3600_000 + 1, '2d'],
    [0, 'now'],
    [-90_000, 'now'],
  ])('formatRemaining(%i) = %s (rounded up)', (ms, text) => {
    expect(formatRemaining(ms)).toBe(text);
  });

  it.each([
    { left: 599_000, cell: 'approve in 10m' },
    { left: 30_000, cell: 'approve in 30s' },
    { left: 0, cell: 'approve due now' },
    { left: -5_000, cell: 'approve due now' },
  ])('the TIMEOUT column with $left ms left: $cell', ({ left, cell }) => {
    process.env.NO_COLOR = '1';
    const a = { ...approval('t1', 'pending', 60_000), timeoutAction: 'approve' as const, expiresAt: new Date(now + left).toISOString() };
    const row = approvalTable([a], now).split('\n')[1]!;
    expect(row).toMatch(new RegExp(`\\s${cell}\\s+title t1$`));
  });
});
