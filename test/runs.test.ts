import { existsSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from './fake-clock.js';
import { git, gitProject, makeProject, startTestDaemon, until, type TestDaemon } from './harness.js';
import { collect } from './sse-collector.js';
import { RUNNER } from '../src/resources/runs/service.js';
import type { Runner } from '../src/resources/runs/runner.js';

// The runner with the `command` runtime (test/fixtures/runs/fake-agent.mjs): dispatch, the
// worktree and its commit, the run log, usage, the run's key and environment, failures and
// retries, cancel, timeouts, limits. The real Claude Code and Codex are driven in runs-clis.test.ts.

const FAKE_AGENT = fileURLToPath(new URL('./fixtures/runs/fake-agent.mjs', import.meta.url));

const daemons: TestDaemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.close();
});

async function start(o: { config?: Record<string, unknown>; clock?: FakeClock; git?: boolean; env?: Record<string, string> } = {}): Promise<TestDaemon> {
  const root = o.git === false ? makeProject(o.config ?? {}) : gitProject(o.config ?? {});
  const d = await startTestDaemon({ root, clock: o.clock, env: { PATH: process.env.PATH!, ...o.env } });
  daemons.push(d);
  return d;
}

async function addAgent(d: TestDaemon, name = 'alice', runtime: Record<string, unknown> = {}, fields: Record<string, unknown> = {}) {
  const r = await d.api('POST', '/api/v1/agents', { body: { name, runtime: { kind: 'command', command: FAKE_AGENT, ...runtime }, ...fields } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data;
}

async function addTask(d: TestDaemon, description: string, extra: Record<string, unknown> = {}) {
  const r = await d.api('POST', '/api/v1/tasks', { body: { title: 'Do the thing', description, assignTo: 'alice', ...extra } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data as { id: string };
}

const runsOf = async (d: TestDaemon, taskId: string) => (await d.api('GET', `/api/v1/runs?taskId=${taskId}`)).body.data as any[];

/** The task's run of this attempt, once it has ended. */
async function finishedRun(d: TestDaemon, taskId: string, attempt = 1, timeoutMs = 15_000): Promise<any> {
  let run: any;
  await until(
    `run ${attempt} of task ${taskId} to finish`,
    async () => {
      run = (await runsOf(d, taskId)).find((r) => r.attempt === attempt);
      return ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'].includes(run?.status);
    },
    timeoutMs,
  );
  return run;
}

const task = async (d: TestDaemon, id: string) => (await d.api('GET', `/api/v1/tasks/${id}`)).body.data;

describe('a task assigned to an agent with a runtime', () => {
  it('runs at once in a worktree of its own, commits the work and goes to review', async () => {
    const d = await start();
    await addAgent(d, 'alice', {}, { identity: { displayName: 'Alice Agent', email: 'alice@example.com' } });
    const events = await collect(d.url, { key: d.key, filter: 'run:,task:transition' });
    const names = () => events.messages.map((m) => m.event);
    const t = await addTask(d, '@write src/hello.txt hello world\n@usage 100 20 0.25');
    const run = await finishedRun(d, t.id);
    expect(run).toMatchObject({ status: 'succeeded', agent: 'alice', runtime: 'command', attempt: 1, reason: 'dispatch', exitCode: 0, error: null });
    const short = t.id.slice(-8);
    expect(run.branch).toBe(`svc/alice/${short}`);
    expect(run.workspace).toBe(join(d.root, '.svc', 'worktrees', short));
    expect(run.summary).toMatch(/^did what the task asked/);
    expect(run.usage).toEqual({ inputTokens: 100, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.25 });
    expect(run.diffStat).toEqual({ files: 1, added: 1, removed: 0 });
    expect(run.sessionId).toBe(`sess-${run.id}`);

    // The commit: on the task's branch, by the agent, with the trailers; the project's own tree untouched.
    const show = git(d.root, 'log', '-1', '--format=%an <%ae>%n%B', run.headCommit);
    expect(show).toContain('Alice Agent <alice@example.com>');
    expect(show).toContain(`Svc-Task: ${t.id}`);
    expect(show).toContain(`Svc-Run: ${run.id}`);
    expect(git(d.root, 'rev-parse', `svc/alice/${short}`)).toBe(run.headCommit);
    expect(existsSync(join(d.root, 'src', 'hello.txt'))).toBe(false);
    expect(git(d.root, 'status', '--porcelain')).toBe('');

    const after = await task(d, t.id);
    expect(after.status).toBe('review');
    expect(after.result).toMatchObject({ runId: run.id, branch: `svc/alice/${short}`, headCommit: run.headCommit, diffStat: { files: 1 } });

    // The diff, the log, the events.
    const diff = (await d.api('GET', `/api/v1/runs/${run.id}/diff`)).body.data;
    expect(diff.patch).toContain('+hello world');
    expect(diff.truncated).toBe(false);
    const log = (await d.api('GET', `/api/v1/runs/${run.id}/log`)).body.data as any[];
    expect(log.map((i) => i.kind)).toEqual(['system', 'file_change', 'usage']);
    expect(log.map((i) => i.seq)).toEqual([1, 2, 3]);
    expect(log[1]).toMatchObject({ path: 'src/hello.txt', change: 'add' });
    await events.until(() => names().includes('run:finished'));
    // The log goes out as it is flushed (every 100 ms at most): one run:activity event, or more
    // when the agent's lines span a flush (a busy machine), together carrying seq 1 to 3 in order.
    const runEvents = events.messages.filter((m) => m.event.startsWith('run:'));
    const activity = runEvents.slice(2, -1);
    expect(runEvents.map((m) => m.event)).toEqual(['run:queued', 'run:started', ...activity.map(() => 'run:activity'), 'run:finished']);
    expect(activity.flatMap((m) => JSON.parse(m.data).items.map((i: { seq: number }) => i.seq))).toEqual([1, 2, 3]);
    expect(names()).toContain('task:transition');
    events.close();
  });

  it('gives the process its SVC_* variables, a key that works only while it runs, and runner.nice', async () => {
    const d = await start({ env: { SVC_VAULT_KEY: 'ab'.repeat(32), SERVICE_API_KEY: 'a-shared-key-of-the-daemon-1234' } });
    await addAgent(d, 'alice', { env: { GREETING: 'hi there' } });
    const keyFile = join(d.root, 'run-key.txt');
    const t = await addTask(
      d,
      [
        '@print-env SVC_TASK_ID',
        '@print-env SVC_AGENT',
        '@print-env SVC_URL',
        '@print-env GREETING',
        '@print-env SVC_VAULT_KEY',
        '@print-env SERVICE_API_KEY',
        '@print-env HOME',
        '@print-nice',
        '@comment progress from the agent',
        `@save-key ${keyFile}`,
      ].join('\n'),
    );
    const run = await finishedRun(d, t.id);
    expect(run.status).toBe('succeeded');
    const texts = ((await d.api('GET', `/api/v1/runs/${run.id}/log`)).body.data as any[]).filter((i) => i.kind === 'text').map((i) => i.text);
    expect(texts).toEqual([
      `SVC_TASK_ID=${t.id}`,
      'SVC_AGENT=alice',
      `SVC_URL=${d.url}`,
      'GREETING=hi there',
      'SVC_VAULT_KEY=(unset)',
      'SERVICE_API_KEY=(unset)',
      // The daemon's HOME, here the test run's own: an agent CLI without one falls back to the user's real home.
      `HOME=${process.env.HOME}`,
      `nice=${Math.max(10, getPriority())}`,
    ]);
    const comments = (await d.api('GET', `/api/v1/tasks/${t.id}/comments`)).body.data as any[];
    expect(comments.map((c) => [c.author, c.body])).toEqual([['alice', 'progress from the agent']]);
    const key = readFileSync(keyFile, 'utf8');
    expect(key).toMatch(/^svc_run_/);
    expect((await d.api('GET', '/api/v1/tasks', { key })).status).toBe(401);
  });

  it('reads vault references at spawn time, gives them to that process only, and never lets them into the log', async () => {
    const d = await start();
    await addAgent(d);
    // A reference to an entry that does not exist is refused, naming agent, service and key.
    const missing = await d.api('PATCH', '/api/v1/agents/alice', { body: { runtime: { kind: 'command', command: FAKE_AGENT, env: { TOKEN: { vault: 'github', key: 'token' } } } } });
    expect(missing.status).toBe(422);
    expect(missing.body.details[0].path).toBe('body.runtime.env.TOKEN');
    expect(missing.body.details[0].message).toMatch(/agent "alice" has no vault entry for service "github"/);
    expect((await d.api('POST', '/api/v1/vault/entries', { body: { agent: 'alice', service: 'github', type: 'api_key', credentials: { token: 'ghp_supersecretvalue123' } } })).status).toBe(200);
    const wrongKey = await d.api('PATCH', '/api/v1/agents/alice', { body: { runtime: { kind: 'command', command: FAKE_AGENT, env: { TOKEN: { vault: 'github', key: 'password' } } } } });
    expect(wrongKey.status).toBe(422);
    expect(wrongKey.body.details[0].message).toMatch(/vault entry "github" has no key "password" \(it has: token\)/);
    expect((await d.api('PATCH', '/api/v1/agents/alice', { body: { runtime: { kind: 'command', command: FAKE_AGENT, env: { TOKEN: { vault: 'github', key: 'token' } } } } })).status).toBe(200);
    const agent = (await d.api('GET', '/api/v1/agents/alice')).body.data;
    expect(agent.runtime.env).toEqual({ TOKEN: { vault: 'github', key: 'token' } });

    const t = await addTask(d, '@print-env TOKEN\n@stderr token is ghp_supersecretvalue123');
    const run = await finishedRun(d, t.id);
    const log = JSON.stringify((await d.api('GET', `/api/v1/runs/${run.id}/log`)).body.data);
    expect(log).toContain('TOKEN=[REDACTED]');
    expect(log).not.toContain('ghp_supersecretvalue123');
    const state = readFileSync(join(d.root, '.svc', 'state.sqlite')).toString('latin1');
    expect(state).not.toContain('ghp_supersecretvalue123');
    expect(d.logs.join('\n')).not.toContain('ghp_supersecretvalue123');
  });
});

describe('runtime validation', () => {
  it('refuses an unknown kind, a missing binary (saying where it looked) and a command runtime with no command', async () => {
    const d = await start();
    const bad = await d.api('POST', '/api/v1/agents', { body: { name: 'x', runtime: { kind: 'gpt-cli' } } });
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toBe('body.runtime.kind');
    const missing = await d.api('POST', '/api/v1/agents', { body: { name: 'x', runtime: { kind: 'claude', command: 'claude-not-installed-here' } } });
    expect(missing.status).toBe(422);
    expect(missing.body.details[0].path).toBe('body.runtime.command');
    expect(missing.body.details[0].message).toMatch(/claude-not-installed-here was not found: looked in .+ \(PATH\); install the Claude Code CLI or give its path as runtime.command/);
    const notExec = await d.api('POST', '/api/v1/agents', { body: { name: 'x', runtime: { kind: 'command', command: join(d.root, 'README.md') } } });
    expect(notExec.status).toBe(422);
    expect(notExec.body.details[0].message).toMatch(/README.md cannot be run: looked at .*README.md \(not executable\)/);
    const noCommand = await d.api('POST', '/api/v1/agents', { body: { name: 'x', runtime: { kind: 'command' } } });
    expect(noCommand.status).toBe(400);
    expect(noCommand.body.details[0].path).toBe('body.runtime.command');
    const reserved = await d.api('POST', '/api/v1/agents', { body: { name: 'x', runtime: { kind: 'command', command: FAKE_AGENT, env: { SVC_API_KEY: 'x' } } } });
    expect(reserved.status).toBe(400);
  });
});

describe('runs by hand, and their errors', () => {
  it('starts a run of a task whose agent does not run on its own, and refuses what cannot run', async () => {
    const d = await start();
    await addAgent(d, 'alice', { autoRun: false });
    await d.api('POST', '/api/v1/agents', { body: { name: 'bob' } });
    const t = await addTask(d, '@write a.txt a');
    expect(await runsOf(d, t.id)).toEqual([]);
    const orphan = (await d.api('POST', '/api/v1/tasks', { body: { title: 'nobody' } })).body.data;
    const noAssignee = await d.api('POST', `/api/v1/tasks/${orphan.id}/runs`, { body: {} });
    expect(noAssignee.status).toBe(422);
    expect(noAssignee.body.details[0].path).toBe('body.agent');
    const noRuntime = await d.api('POST', `/api/v1/tasks/${orphan.id}/runs`, { body: { agent: 'bob' } });
    expect(noRuntime.status).toBe(422);
    expect(noRuntime.body.details[0].message).toMatch(/agent "bob" has no runtime/);

    const started = await d.api('POST', `/api/v1/tasks/${t.id}/runs`, { body: { prompt: 'also say hello' } });
    expect(started.status).toBe(201);
    expect(started.body.data).toMatchObject({ status: 'queued', reason: 'manual', agent: 'alice' });
    const again = await d.api('POST', `/api/v1/tasks/${t.id}/runs`, { body: {} });
    // Queued or already running: either way it is live.
    expect(again.status).toBe(409);
    const run = await finishedRun(d, t.id);
    expect(run.status).toBe('succeeded');
    const cancelDone = await d.api('POST', `/api/v1/runs/${run.id}/cancel`);
    expect(cancelDone.status).toBe(409);
    expect((await d.api('GET', '/api/v1/runs/nope')).status).toBe(404);
  });
});

describe('failures', () => {
  it('fails the task with the run error and retries it after a backoff, resuming the session', async () => {
    const clock = new FakeClock(Date.now());
    const d = await start({ clock });
    await addAgent(d);
    const t = await addTask(d, '@stderr something broke\n@exit 3', { maxRetries: 1 });
    const first = await finishedRun(d, t.id);
    expect(first).toMatchObject({ status: 'failed', exitCode: 3 });
    expect(first.error).toBe('exited with code 3: something broke');
    let runs: any[] = [];
    await until('the retry to be queued', async () => (runs = await runsOf(d, t.id)).length === 2);
    expect(runs[0]).toMatchObject({ status: 'queued', reason: 'retry', attempt: 2 });
    expect(Date.parse(runs[0].notBefore) - clock.now()).toBeGreaterThanOrEqual(9_000);
    expect((await task(d, t.id)).status).toBe('failed');
    await clock.pass(10_100);
    const second = await finishedRun(d, t.id, 2);
    expect(second).toMatchObject({ status: 'failed', attempt: 2 });
    const log = (await d.api('GET', `/api/v1/runs/${second.id}/log`)).body.data as any[];
    expect(log[0].text).toContain(`resumed ${first.sessionId}`);
    const after = await task(d, t.id);
    expect(after).toMatchObject({ status: 'failed', retries: 1 });
    // No retry is left: nothing more is queued.
    expect((await runsOf(d, t.id)).length).toBe(2);
  });

  it('times a silent run out (runner.stallTimeoutSec) on the daemon clock', async () => {
    const clock = new FakeClock(Date.now());
    const d = await start({ clock, config: { runner: { stallTimeoutSec: 30 } } });
    await addAgent(d);
    const t = await addTask(d, '@hang', { maxRetries: 0 });
    await until('the run to start', async () => (await runsOf(d, t.id))[0]?.status === 'running');
    await until('its first line', async () => (await runsOf(d, t.id))[0]?.logItems >= 2);
    await clock.pass(31_000);
    const run = await finishedRun(d, t.id);
    expect(run.status).toBe('timed_out');
    expect(run.error).toMatch(/no output for 30 s/);
    expect((await task(d, t.id)).status).toBe('failed');
  });
});

describe('cancel', () => {
  it('ends a live run and leaves its task assigned, with no new run until someone asks', async () => {
    const d = await start();
    await addAgent(d);
    const pidFile = join(d.root, 'pid.txt');
    const t = await addTask(d, `@trace ${pidFile}\n@tick 200`);
    await until('the run to print', async () => (await runsOf(d, t.id))[0]?.logItems >= 2);
    const [live] = await runsOf(d, t.id);
    const before = Date.now();
    const res = await d.api('POST', `/api/v1/runs/${live.id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('cancelled');
    expect(Date.now() - before).toBeLessThan(15_000);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(() => process.kill(pid, 0)).toThrow();
    expect(await task(d, t.id)).toMatchObject({ status: 'assigned', assignTo: 'alice' });
    await new Promise((r) => setTimeout(r, 200));
    expect((await runsOf(d, t.id)).length).toBe(1);
    expect((await d.api('POST', `/api/v1/tasks/${t.id}/runs`, { body: {} })).status).toBe(201);
  });

  it('ends the run when a person moves its task away', async () => {
    const d = await start();
    await addAgent(d);
    const t = await addTask(d, '@tick 100');
    await until('the run to run', async () => (await runsOf(d, t.id))[0]?.status === 'running');
    expect((await d.api('POST', `/api/v1/tasks/${t.id}/transition`, { body: { to: 'failed', reason: 'not needed' } })).status).toBe(200);
    const run = await finishedRun(d, t.id);
    expect(run.status).toBe('cancelled');
    expect(run.error).toMatch(/moved to failed/);
  });
});

describe('order and limits', () => {
  it('runs a dependency first and starts the next task from its branch', async () => {
    const d = await start();
    await addAgent(d);
    const a = await addTask(d, '@write first.txt from a');
    const b = await addTask(d, '@write second.txt from b', { dependsOn: [a.id] });
    const ra = await finishedRun(d, a.id);
    expect(await runsOf(d, b.id)).toEqual([]);
    expect((await d.api('POST', `/api/v1/tasks/${a.id}/transition`, { body: { to: 'done' } })).status).toBe(200);
    const rb = await finishedRun(d, b.id);
    expect(rb.status).toBe('succeeded');
    expect(rb.baseCommit).toBe(ra.headCommit);
    const files = git(d.root, 'ls-tree', '-r', '--name-only', rb.headCommit);
    expect(files.split('\n')).toEqual(expect.arrayContaining(['first.txt', 'second.txt']));
  });

  it('keeps each agent under its maxConcurrency, the rest waiting in order', async () => {
    const d = await start();
    await addAgent(d, 'alice', {}, { maxConcurrency: 1 });
    const t1 = await addTask(d, '@tick 100');
    const t2 = await addTask(d, '@write x.txt x');
    await until('the first run', async () => (await runsOf(d, t1.id))[0]?.status === 'running');
    expect((await runsOf(d, t2.id))[0].status).toBe('queued');
    await d.api('POST', `/api/v1/runs/${(await runsOf(d, t1.id))[0].id}/cancel`);
    expect((await finishedRun(d, t2.id)).status).toBe('succeeded');
  });

  it('runs in the project folder, one at a time, when the project is not a git repository', async () => {
    const d = await start({ git: false });
    await until('the runner to say where agents run', async () => /not a git repository/.test(d.logs.join('\n')));
    await addAgent(d, 'alice', {}, { maxConcurrency: 4 });
    const t = await addTask(d, '@write made-here.txt yes');
    const run = await finishedRun(d, t.id);
    expect(run).toMatchObject({ status: 'succeeded', branch: null, headCommit: null, workspace: d.root });
    expect(readFileSync(join(d.root, 'made-here.txt'), 'utf8')).toBe('yes\n');
  });
});

describe('the run log and usage', () => {
  it('keeps malformed lines as text, bounds the log, pages it and sums usage', async () => {
    const d = await start({ config: { runner: { maxLogItems: 100 } } });
    await addAgent(d);
    const t = await addTask(d, '@lines 250\n@usage 7 3 0.5');
    const run = await finishedRun(d, t.id);
    expect(run.logItems).toBe(101);
    const page = (await d.api('GET', `/api/v1/runs/${run.id}/log?after=95&limit=10`)).body.data as any[];
    expect(page.map((i) => i.seq)).toEqual([96, 97, 98, 99, 100, 101]);
    expect(page.at(-1)).toMatchObject({ kind: 'truncated' });
    expect(page.at(-1).dropped).toBeGreaterThan(100);
    const t2 = await addTask(d, '@hang');
    await until('a raw line', async () => ((await runsOf(d, t2.id))[0]?.logItems ?? 0) >= 2);
    const raw = (await d.api('GET', `/api/v1/runs/${(await runsOf(d, t2.id))[0].id}/log`)).body.data as any[];
    expect(raw[1]).toMatchObject({ kind: 'raw', text: 'not json: about to hang' });
    await d.api('POST', `/api/v1/runs/${(await runsOf(d, t2.id))[0].id}/cancel`);
    const usage = (await d.api('GET', '/api/v1/usage?groupBy=agent')).body.data;
    expect(usage).toEqual([{ key: 'alice', runs: 2, inputTokens: 7, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.5 }]);
    expect((await d.api('GET', '/api/v1/usage?groupBy=week')).status).toBe(400);
  });
});

describe('workspaces', () => {
  it("removes a done task's worktree after runner.keepWorkspacesHours; its branch stays", async () => {
    const clock = new FakeClock(Date.now());
    const d = await start({ clock, config: { runner: { keepWorkspacesHours: 2 } } });
    await addAgent(d);
    const t = await addTask(d, '@write kept.txt kept');
    const run = await finishedRun(d, t.id);
    const runner = d.daemon.app.services.get(RUNNER) as Runner;
    expect(existsSync(run.workspace)).toBe(true);
    await clock.pass(3 * 3_600_000);
    // Not done yet (in review): kept.
    expect(await runner.cleanWorkspaces()).toBe(0);
    expect(existsSync(run.workspace)).toBe(true);
    expect((await d.api('POST', `/api/v1/tasks/${t.id}/transition`, { body: { to: 'done' } })).status).toBe(200);
    // Done, and its last run ended 3 h ago, past the 2 h a worktree is kept.
    expect(await runner.cleanWorkspaces()).toBe(1);
    expect(existsSync(run.workspace)).toBe(false);
    expect(git(d.root, 'show', `svc/alice/${t.id.slice(-8)}:kept.txt`)).toBe('kept');
    expect((await d.api('GET', `/api/v1/runs/${run.id}`)).body.data.workspace).toBe(null);
    expect((await d.api('GET', `/api/v1/runs/${run.id}/diff`)).body.data.patch).toContain('+kept');
  });
});

describe('review and the claim', () => {
  it('a rejected review sends the task back: a revision run with the feedback, resuming the session', async () => {
    const d = await start();
    await addAgent(d);
    const t = await addTask(d, '@write draft.txt first draft');
    const first = await finishedRun(d, t.id);
    expect((await task(d, t.id)).status).toBe('review');
    const approval = await d.api('POST', '/api/v1/approvals', { body: { taskId: t.id, requestedBy: 'reviewer', title: 'Merge it?' } });
    expect(approval.status).toBe(201);
    const rejected = await d.api('POST', `/api/v1/approvals/${approval.body.data.id}/reject`, { body: { feedback: 'Say it in French.' } });
    expect(rejected.status).toBe(200);
    const second = await finishedRun(d, t.id, 2);
    expect(second).toMatchObject({ status: 'succeeded', reason: 'revision', attempt: 2 });
    const log = (await d.api('GET', `/api/v1/runs/${second.id}/log`)).body.data as any[];
    // The fake agent says which session it resumed, and how long its prompt was.
    expect(log[0].text).toContain(`resumed ${first.sessionId}`);
    expect(await task(d, t.id)).toMatchObject({ status: 'review', revisionCount: 1 });
    // The prompt carried the feedback: the agent's summary counts the characters it read.
    const promptLength = (s: string) => Number(/\((\d+) characters of prompt\)/.exec(s)![1]);
    expect(promptLength(second.summary)).toBeGreaterThan(promptLength(first.summary));
  });

  it('the review loop ends: approved → done; rejected past tasks.maxRevisions → failed, saying why, with no other run', async () => {
    const d = await start({ config: { tasks: { maxRevisions: 1 } } });
    await addAgent(d);
    const review = async (id: string, verb: 'approve' | 'reject', feedback?: string) => {
      const a = await d.api('POST', '/api/v1/approvals', { body: { taskId: id, requestedBy: 'reviewer', title: 'Merge it?' } });
      expect(a.status).toBe(201);
      expect((await d.api('POST', `/api/v1/approvals/${a.body.data.id}/${verb}`, { body: feedback ? { feedback } : {} })).status).toBe(200);
    };
    // Sent back once, then approved: done, after two runs, the second resuming the first's session.
    const good = await addTask(d, '@write page.txt a page');
    const first = await finishedRun(d, good.id);
    await review(good.id, 'reject', 'Add a title.');
    const revision = await finishedRun(d, good.id, 2);
    expect(revision).toMatchObject({ status: 'succeeded', reason: 'revision' });
    expect((await d.api('GET', `/api/v1/runs/${revision.id}/log`)).body.data[0].text).toContain(`resumed ${first.sessionId}`);
    await review(good.id, 'approve');
    expect(await task(d, good.id)).toMatchObject({ status: 'done', revisionCount: 1 });
    // Sent back as often as allowed, then once more: failed with the reason, and no third run.
    const bad = await addTask(d, '@write other.txt a draft');
    await finishedRun(d, bad.id);
    await review(bad.id, 'reject', 'No.');
    await finishedRun(d, bad.id, 2);
    await review(bad.id, 'reject', 'Still no.');
    expect(await task(d, bad.id)).toMatchObject({ status: 'failed', revisionCount: 1, result: { error: 'rejected after 1 revision(s); tasks.maxRevisions is 1: Still no.' } });
    await new Promise((r) => setTimeout(r, 200));
    expect((await runsOf(d, bad.id)).length).toBe(2);
  });

  it('holds the task with heartbeats while the run lives, however short the lease', async () => {
    const clock = new FakeClock(Date.now());
    const d = await start({ clock, config: { tasks: { leaseSeconds: 6 } } });
    await addAgent(d);
    const t = await addTask(d, '@tick 50');
    await until('the run to work', async () => (await runsOf(d, t.id))[0]?.status === 'running');
    for (let i = 0; i < 10; i++) await clock.pass(1_000);
    expect(await task(d, t.id)).toMatchObject({ status: 'in_progress', assignTo: 'alice' });
    await d.api('POST', `/api/v1/runs/${(await runsOf(d, t.id))[0].id}/cancel`);
  });

  it('answers run_list and run_get over MCP', async () => {
    const d = await start();
    await addAgent(d);
    const t = await addTask(d, '@write mcp.txt yes');
    const run = await finishedRun(d, t.id);
    const client = new Client({ name: 'runs-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${d.key}` } } }));
    try {
      const list = await client.callTool({ name: 'run_list', arguments: { taskId: t.id } });
      expect(list.isError).toBeFalsy();
      expect((list.structuredContent as any).runs.map((r: any) => r.id)).toEqual([run.id]);
      const got = await client.callTool({ name: 'run_get', arguments: { runId: run.id } });
      expect((got.structuredContent as any).run).toMatchObject({ id: run.id, status: 'succeeded', branch: run.branch });
      expect((got.content as any)[0].text).toContain(`branch ${run.branch}`);
      const missing = await client.callTool({ name: 'run_get', arguments: { runId: 'nope' } });
      expect(missing.isError).toBe(true);
    } finally {
      await client.close();
    }
  });
});
