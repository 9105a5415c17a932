import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from './fake-clock.js';
import { gitProject, startTestDaemon, until, type TestDaemon } from './harness.js';

// Permission prompts as approvals (permissionMode "ask"), through the runner with the `command`
// runtime: test/fixtures/runs/fake-agent.mjs asks svc's permission_prompt over MCP with its run's
// key (`@ask <file> <tool> <json>`), as Claude Code does, and writes <file> only when allowed.
// The real Claude Code asks the same tool in runs-clis.test.ts.

const FAKE_AGENT = fileURLToPath(new URL('./fixtures/runs/fake-agent.mjs', import.meta.url));
const SECRET = 'ghp_supersecretvalue123';

const daemons: TestDaemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.close();
});

async function start(o: { config?: Record<string, unknown>; clock?: FakeClock; root?: string; keepRoot?: boolean } = {}): Promise<TestDaemon> {
  const d = await startTestDaemon({ root: o.root ?? gitProject(o.config ?? {}, ['asked*']), clock: o.clock, keepRoot: o.keepRoot, env: { PATH: process.env.PATH! } });
  daemons.push(d);
  return d;
}

/** alice runs the fake agent with permissionMode ask, with a vault secret in her environment. */
async function addAgent(d: TestDaemon, fields: Record<string, unknown> = {}) {
  expect((await d.api('POST', '/api/v1/agents', { body: { name: 'alice', runtime: { kind: 'command', command: FAKE_AGENT }, ...fields } })).status).toBe(201);
  expect((await d.api('POST', '/api/v1/vault/entries', { body: { agent: 'alice', service: 'github', type: 'api_key', credentials: { token: SECRET } } })).status).toBe(200);
  const runtime = { kind: 'command', command: FAKE_AGENT, permissionMode: 'ask', env: { TOKEN: { vault: 'github', key: 'token' } } };
  expect((await d.api('PATCH', '/api/v1/agents/alice', { body: { runtime } })).status).toBe(200);
}

async function addTask(d: TestDaemon, description: string): Promise<string> {
  const r = await d.api('POST', '/api/v1/tasks', { body: { title: 'Run the tests', description, assignTo: 'alice', maxRetries: 0 } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data.id;
}

/** The line that makes the fake agent ask to run `command` with Bash, writing `file` if it may. */
const ask = (file: string, command: string, tool = 'Bash') => `@ask ${file} ${tool} ${JSON.stringify({ command, description: 'run the tests' })}`;

const runsOf = async (d: TestDaemon, taskId: string) => (await d.api('GET', `/api/v1/runs?taskId=${taskId}`)).body.data as any[];
const approvalsOf = async (d: TestDaemon, taskId: string) => (await d.api('GET', `/api/v1/approvals?taskId=${taskId}`)).body.data as any[];
const taskOf = async (d: TestDaemon, id: string) => (await d.api('GET', `/api/v1/tasks/${id}`)).body.data;
const logOf = async (d: TestDaemon, runId: string) => (await d.api('GET', `/api/v1/runs/${runId}/log?limit=1000`)).body.data as any[];

async function pendingAsk(d: TestDaemon, taskId: string, n = 1): Promise<any> {
  let found: any[] = [];
  await until(
    `permission request ${n} of task ${taskId}`,
    async () => {
      found = (await approvalsOf(d, taskId)).filter((a) => a.status === 'pending');
      return found.length >= 1 && (await approvalsOf(d, taskId)).length >= n;
    },
    15_000,
  );
  return found[0];
}

async function finished(d: TestDaemon, taskId: string, attempt = 1): Promise<any> {
  let run: any;
  await until(
    `run ${attempt} of task ${taskId} to end`,
    async () => {
      run = (await runsOf(d, taskId)).find((r) => r.attempt === attempt);
      return ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'].includes(run?.status);
    },
    15_000,
  );
  return run;
}

const eventsOf = async (d: TestDaemon, names: string[]) => (await d.daemon.app.events.since(0, 10_000)).filter((e) => names.includes(e.name));

describe('a permission the CLI asks for', () => {
  it('becomes an approval showing agent, task, tool and input (secrets redacted); approving lets the call run; the task stays in_progress', async () => {
    const d = await start();
    await addAgent(d);
    const marker = join(d.root, 'asked-1');
    const taskId = await addTask(d, ask(marker, `npm test -- --token ${SECRET}`));
    const a = await pendingAsk(d, taskId);
    const [run] = await runsOf(d, taskId);
    expect(a).toMatchObject({
      kind: 'permission',
      taskId,
      runId: run.id,
      agent: 'alice',
      tool: 'Bash',
      requestedBy: 'alice',
      title: 'alice wants to run Bash: npm test -- --token [REDACTED]',
      reason: 'run the tests',
      payload: { tool: 'Bash', input: { command: 'npm test -- --token [REDACTED]', description: 'run the tests' }, toolUseId: 'fake_1' },
      taskFrom: null,
      timeoutAction: 'reject',
      alwaysAllowed: null,
    });
    expect(Date.parse(a.expiresAt) - Date.parse(a.createdAt)).toBe(900_000);
    expect((await eventsOf(d, ['approval:requested'])).map((e) => e.data)).toEqual([
      { approvalId: a.id, kind: 'permission', taskId, missionId: null, title: a.title, requestedBy: 'alice', runId: run.id, tool: 'Bash' },
    ]);
    // The run waits; its task is not moved by the request.
    expect((await taskOf(d, taskId)).status).toBe('in_progress');
    expect(run.status).toBe('running');
    expect(existsSync(marker)).toBe(false);
    expect((await d.api('GET', `/api/v1/approvals?kind=permission&runId=${run.id}`)).body.data.map((x: any) => x.id)).toEqual([a.id]);
    expect((await d.api('GET', `/api/v1/approvals?kind=task`)).body.data).toEqual([]);

    const approved = await d.api('POST', `/api/v1/approvals/${a.id}/approve`, { body: { resolvedBy: 'lead' } });
    expect(approved.status).toBe(200);
    expect(approved.body.data).toMatchObject({ status: 'approved', resolvedBy: 'lead', kind: 'permission' });
    const ended = await finished(d, taskId);
    expect(ended.status, ended.error).toBe('succeeded');
    // The CLI was given the input it sent, not the redacted copy.
    expect(JSON.parse(readFileSync(marker, 'utf8'))).toEqual({ command: `npm test -- --token ${SECRET}`, description: 'run the tests' });
    const log = await logOf(d, run.id);
    expect(log).toContainEqual(expect.objectContaining({ kind: 'system', text: 'permission answered as text/event-stream' }));
    expect(log).toContainEqual(expect.objectContaining({ kind: 'tool_result', isError: false }));
    expect((await taskOf(d, taskId)).status).toBe('review');
    // Deciding it again is a conflict, whichever way.
    for (const [verb, body] of [
      ['approve', {}],
      ['reject', { feedback: 'too late' }],
    ] as const) {
      const again = await d.api('POST', `/api/v1/approvals/${a.id}/${verb}`, { body });
      expect(again.status).toBe(409);
      expect(again.body.error).toMatch(/already approved by lead/);
    }
    // The secret is nowhere in the state or the log.
    expect(readFileSync(join(d.root, '.svc', 'state.sqlite')).toString('latin1')).not.toContain(SECRET);
    expect(d.logs.join('\n')).not.toContain(SECRET);
  });

  it('a rejection refuses the call with the feedback as the reason; nothing runs and the task is not sent back', async () => {
    const d = await start();
    await addAgent(d);
    const marker = join(d.root, 'asked-2');
    const taskId = await addTask(d, ask(marker, 'rm -rf build'));
    const a = await pendingAsk(d, taskId);
    const rejected = await d.api('POST', `/api/v1/approvals/${a.id}/reject`, { body: { feedback: 'not the build folder', resolvedBy: 'lead' } });
    expect(rejected.status).toBe(200);
    const run = await finished(d, taskId);
    expect(run.status).toBe('succeeded');
    expect(existsSync(marker)).toBe(false);
    const result = (await logOf(d, run.id)).find((i) => i.kind === 'tool_result');
    expect(result).toMatchObject({ isError: true });
    expect(JSON.parse(result.output)).toEqual({ behavior: 'deny', message: 'lead refused: not the build folder' });
    const t = await taskOf(d, taskId);
    expect(t).toMatchObject({ status: 'review', revisionCount: 0 });
    expect(t.description).not.toContain('not the build folder');
  });

  it('"always allow" adds the tool to the agent\'s allowedTools in the same decision; the run\'s next ask of it is allowed at once', async () => {
    const d = await start();
    await addAgent(d, { allowedTools: ['Read'] });
    const [first, second] = [join(d.root, 'asked-a'), join(d.root, 'asked-b')];
    const taskId = await addTask(d, [ask(first, 'npm test'), ask(second, 'npm run lint')].join('\n'));
    const a = await pendingAsk(d, taskId);
    const since = await d.daemon.app.events.lastId();
    const approved = await d.api('POST', `/api/v1/approvals/${a.id}/approve`, { body: { alwaysAllow: true } });
    expect(approved.status).toBe(200);
    expect(approved.body.data).toMatchObject({ status: 'approved', alwaysAllowed: 'Bash' });
    // One transaction: the agent's change and the decision, together.
    const events = (await d.daemon.app.events.since(since, 100)).filter((e) => e.name.startsWith('agent:') || e.name.startsWith('approval:'));
    expect(events.map((e) => [e.name, e.data])).toEqual([
      ['agent:updated', { name: 'alice', fields: ['allowedTools'] }],
      ['approval:resolved', expect.objectContaining({ approvalId: a.id, kind: 'permission', status: 'approved', alwaysAllowed: 'Bash' })],
    ]);
    expect((await d.api('GET', '/api/v1/agents/alice')).body.data.allowedTools).toEqual(['Read', 'Bash']);
    const run = await finished(d, taskId);
    expect(run.status).toBe('succeeded');
    expect(existsSync(first) && existsSync(second)).toBe(true);
    expect(await approvalsOf(d, taskId)).toHaveLength(1);
  });

  it('a task gate cannot allow a tool for good (422 naming the field)', async () => {
    const d = await start();
    const t = await d.api('POST', '/api/v1/tasks', { body: { title: 'gated' } });
    const gate = await d.api('POST', '/api/v1/approvals', { body: { taskId: t.body.data.id, requestedBy: 'ana', title: 'ok?' } });
    const r = await d.api('POST', `/api/v1/approvals/${gate.body.data.id}/approve`, { body: { alwaysAllow: true } });
    expect(r.status).toBe(422);
    expect(r.body.details).toEqual([{ path: 'body.alwaysAllow', message: expect.stringMatching(/gates a task/) }]);
    expect((await d.api('GET', `/api/v1/approvals/${gate.body.data.id}`)).body.data.status).toBe('pending');
    const kind = await d.api('GET', '/api/v1/approvals?kind=gate');
    expect(kind.status).toBe(400);
    expect(kind.body.details[0].path).toBe('query.kind');
  });

  it.each(['reject', 'approve'] as const)('nobody decides within runner.permissionTimeoutSec: the timeout %ss on the daemon clock, and the wait is no stall', async (action) => {
    const clock = new FakeClock(Date.now());
    const d = await start({ clock, config: { runner: { permissionTimeoutSec: 120, permissionTimeoutAction: action, stallTimeoutSec: 30 } } });
    await addAgent(d);
    const marker = join(d.root, 'asked-t');
    const taskId = await addTask(d, ask(marker, 'npm test'));
    const a = await pendingAsk(d, taskId);
    expect(a).toMatchObject({ timeoutAction: action });
    expect(Date.parse(a.expiresAt) - Date.parse(a.createdAt)).toBe(120_000);
    // Four stall timeouts pass while the CLI waits on svc: it is not ended.
    await clock.pass(119_000);
    expect((await runsOf(d, taskId))[0].status).toBe('running');
    await clock.pass(2_000);
    const run = await finished(d, taskId);
    expect(run.status, run.error).toBe('succeeded');
    expect((await d.api('GET', `/api/v1/approvals/${a.id}`)).body.data).toMatchObject({ status: action === 'approve' ? 'approved' : 'rejected', resolvedBy: 'timeout', timedOut: true });
    expect(existsSync(marker)).toBe(action === 'approve');
    if (action === 'reject') {
      const result = (await logOf(d, run.id)).find((i) => i.kind === 'tool_result');
      expect(JSON.parse(result.output).message).toMatch(/Nobody decided whether you may use Bash in time/);
    }
  });

  it('a run cancelled while its CLI waits leaves nothing waiting: the request is rejected, saying why', async () => {
    const d = await start();
    await addAgent(d);
    const taskId = await addTask(d, ask(join(d.root, 'asked-c'), 'npm test'));
    const a = await pendingAsk(d, taskId);
    const [run] = await runsOf(d, taskId);
    expect((await d.api('POST', `/api/v1/runs/${run.id}/cancel`)).status).toBe(200);
    await until('the request to be refused', async () => (await d.api('GET', `/api/v1/approvals/${a.id}`)).body.data.status === 'rejected');
    expect((await d.api('GET', `/api/v1/approvals/${a.id}`)).body.data).toMatchObject({ resolvedBy: 'run cancelled', feedback: 'the run ended (cancelled) before anyone decided', timedOut: false });
    expect((await d.api('POST', `/api/v1/approvals/${a.id}/approve`, { body: {} })).status).toBe(409);
    expect((await taskOf(d, taskId)).status).toBe('assigned');
  });

  it("only a run's key asks: another key is refused, and is not offered the tool", async () => {
    const d = await start();
    const mcp = (body: unknown) => d.api('POST', '/mcp', { body, headers: { accept: 'application/json, text/event-stream' } });
    const list = await mcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(list.body.result.tools.map((t: any) => t.name)).not.toContain('permission_prompt');
    const call = await mcp({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'permission_prompt', arguments: { tool_name: 'Bash', input: { command: 'ls' } } } });
    expect(call.body.result.isError).toBe(true);
    expect(call.body.result.content[0].text).toMatch(/^Error forbidden \(403\): Tool permission_prompt is called by the CLI of a run svc started/);
    expect(await approvalsOf(d, 'none')).toEqual([]);
  });
});

describe('across a daemon restart', () => {
  it('a pending request stays: the resumed CLI asks again, waits on the same request, and runs once it is approved', async () => {
    const d1 = await start({ keepRoot: true });
    await addAgent(d1);
    const marker = join(d1.root, 'asked-r');
    const taskId = await addTask(d1, ask(marker, 'npm test'));
    const a = await pendingAsk(d1, taskId);
    const [first] = await runsOf(d1, taskId);
    await d1.close();
    daemons.splice(daemons.indexOf(d1), 1);

    const d2 = await start({ root: d1.root });
    await until('the run queued again to ask again', async () => (await runsOf(d2, taskId)).some((r) => r.attempt === 2 && r.status === 'running'), 15_000);
    const second = (await runsOf(d2, taskId)).find((r) => r.attempt === 2);
    expect((await runsOf(d2, taskId)).find((r) => r.id === first.id).status).toBe('lost');
    // The same request, now the new run's: no second one.
    await until('the request to follow the new run', async () => (await d2.api('GET', `/api/v1/approvals/${a.id}`)).body.data.runId === second.id);
    expect(await approvalsOf(d2, taskId)).toHaveLength(1);
    expect((await d2.api('POST', `/api/v1/approvals/${a.id}/approve`, { body: {} })).status).toBe(200);
    expect((await finished(d2, taskId, 2)).status).toBe('succeeded');
    expect(existsSync(marker)).toBe(true);
  });

  it('a request decided while no CLI waited (its timeout, at start) answers the resumed CLI, which is refused', async () => {
    const clock1 = new FakeClock(Date.now());
    const d1 = await start({ keepRoot: true, clock: clock1, config: { runner: { permissionTimeoutSec: 60 } } });
    await addAgent(d1);
    const marker = join(d1.root, 'asked-s');
    const taskId = await addTask(d1, ask(marker, 'npm test'));
    const a = await pendingAsk(d1, taskId);
    await d1.close();
    daemons.splice(daemons.indexOf(d1), 1);

    // The next daemon starts after the timeout: it decides the request before it runs anything.
    const d2 = await start({ root: d1.root, clock: new FakeClock(clock1.now() + 120_000) });
    expect((await d2.api('GET', `/api/v1/approvals/${a.id}`)).body.data).toMatchObject({ status: 'rejected', timedOut: true });
    const run = await finished(d2, taskId, 2);
    expect(run.status).toBe('succeeded');
    expect(existsSync(marker)).toBe(false);
    const result = (await logOf(d2, run.id)).find((i) => i.kind === 'tool_result');
    expect(JSON.parse(result.output)).toMatchObject({ behavior: 'deny' });
    expect(await approvalsOf(d2, taskId)).toHaveLength(1);
  });
});
