import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { relativeTime } from '../src/lib/human.js';
import { tempDir } from './temp.js';
import { agentCli } from './agent-clis.js';
import { FakeClock } from './fake-clock.js';
import { git, gitProject, startTestDaemon, until, type TestDaemon } from './harness.js';
import * as A from './scripted-anthropic.js';
import * as R from './scripted-responses.js';

// svc's runner driving the real, pinned Claude Code and Codex (test/agent-clis.ts), offline: each
// CLI talks to a scripted model server on 127.0.0.1 and back to the daemon's /mcp with its run's
// key. A task assigned to the agent is all it takes: svc queues the run, makes the worktree,
// starts the CLI, reads its stream, commits the work and moves the task to review.

const claude = agentCli('claude');
const codex = agentCli('codex');

const temp = (prefix: string): string => tempDir(`svc-${prefix}-`);

/**
 * Claude Code's environment against a scripted model at `baseUrl`, with a config folder of the
 * test's. It keeps a folder of its own in TMPDIR (claude-<uid>): one of the test's, removed after it.
 */
const claudeEnv = (baseUrl: string): Record<string, string> => ({
  ANTHROPIC_BASE_URL: baseUrl,
  ANTHROPIC_API_KEY: 'sk-scripted',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  CLAUDE_CONFIG_DIR: temp('claude-config'),
  TMPDIR: temp('claude-tmp'),
});

const daemons: TestDaemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.close();
});

async function start(clock?: FakeClock, config: Record<string, unknown> = {}): Promise<TestDaemon> {
  const d = await startTestDaemon({ root: gitProject(config), clock, env: { PATH: process.env.PATH! } });
  daemons.push(d);
  return d;
}

const runsOf = async (d: TestDaemon, taskId: string) => (await d.api('GET', `/api/v1/runs?taskId=${taskId}`)).body.data as any[];
const ENDED = ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'];

async function runOf(d: TestDaemon, taskId: string, attempt: number, statuses = ENDED, timeoutMs = 30_000): Promise<any> {
  let run: any;
  try {
    await until(
      `run ${attempt} of task ${taskId} to be ${statuses.join('|')}`,
      async () => {
        run = (await runsOf(d, taskId)).find((r) => r.attempt === attempt);
        return statuses.includes(run?.status);
      },
      timeoutMs,
    );
  } catch (e) {
    // CI prints a failure's first line only: it says how far the run got, not just that it is late.
    throw new Error(`${(e as Error).message}: ${await whereRunIs(d, run)}`);
  }
  return run;
}

/** Where a run stands, in a line: its status, when it started, and its log's last items with their times. */
async function whereRunIs(d: TestDaemon, run: any): Promise<string> {
  if (!run) return 'no such run yet';
  const since = (at: string | null | undefined) => relativeTime(at) ?? 'never';
  const log = await logOf(d, run.id).catch(() => []);
  const last = log.slice(-3).map((l) => `${l.kind}${l.tool ? ` ${l.tool}` : ''} ${since(l.at)}`);
  return `it is ${run.status}, created ${since(run.createdAt)}, started ${since(run.startedAt)}; ${log.length} log items${last.length ? `, the last: ${last.join(', ')}` : ''}`;
}

/**
 * A run paused by a usage limit (task "Limited") resumed the same run and session, sent the model
 * the task once more with why it resumes (`conversation`: reads the last request's messages or input),
 * and sent its task to review with no retry counted.
 */
async function expectResumed(d: TestDaemon, taskId: string, paused: any, summary: string, conversation: () => unknown): Promise<void> {
  const resumed = await runOf(d, taskId, 1, ['succeeded']);
  expect(resumed).toMatchObject({ id: paused.id, summary, sessionId: paused.sessionId });
  const sent = JSON.stringify(conversation());
  expect(sent.split('# Task: Limited').length - 1).toBe(2);
  expect(sent).toContain('This run was paused by a usage limit');
  expect((await d.api('GET', `/api/v1/tasks/${taskId}`)).body.data).toMatchObject({ status: 'review', retries: 0 });
}

async function task(d: TestDaemon, title: string, agent: string, maxRetries = 0): Promise<string> {
  const r = await d.api('POST', '/api/v1/tasks', { body: { title, description: 'scripted', assignTo: agent, maxRetries } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}

const logOf = async (d: TestDaemon, runId: string) => (await d.api('GET', `/api/v1/runs/${runId}/log?limit=1000`)).body.data as any[];

// Each test starts real agent CLIs (a Node program of 200 MB, or a native one) several times and
// waits for their runs (runOf: 30 s each): on a loaded machine that is more than the default 30 s.
const AGENT_CLI_TEST_MS = 90_000;

describe.skipIf(!claude)(`the runner driving Claude Code ${claude?.version}`, { timeout: AGENT_CLI_TEST_MS }, () => {
  let up: A.ScriptedAnthropic;
  beforeAll(async () => {
    up = await A.startScriptedAnthropic();
  });
  afterAll(async () => {
    await up?.close();
  });
  // Turns a failed test left unanswered must not answer the next test's CLI: one failure stays one.
  afterEach(() => up?.forget());

  async function claudeAgent(d: TestDaemon, extra: Record<string, unknown> = {}, runtime: Record<string, unknown> = {}): Promise<{ configDir: string }> {
    const env = claudeEnv(up.baseUrl);
    const r = await d.api('POST', '/api/v1/agents', {
      body: { name: 'cody', model: 'anthropic/claude-opus-4-8', allowedTools: ['Bash'], runtime: { kind: 'claude', command: claude!.path, env, ...runtime }, ...extra },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return { configDir: env.CLAUDE_CONFIG_DIR };
  }

  it('writes and commits a file, runs a command, leaves a note over MCP with its key, and sends the task to review', async () => {
    const d = await start();
    await claudeAgent(d);
    const seen = up.requests.length;
    const taskId = await task(d, 'Write the greeting', 'cody');
    up.script(
      { blocks: [A.write('notes/hello.txt', 'hello from claude\n')] },
      { blocks: [A.bash('cat notes/hello.txt && echo shown')] },
      { blocks: [A.svcTool('task_comment', { taskId, body: 'greeting written' })] },
      { blocks: [A.text('Wrote notes/hello.txt.')], usage: { input: 40, output: 8 } },
    );
    const run = await runOf(d, taskId, 1);
    expect(run.status, run.error).toBe('succeeded');
    expect(run.summary).toBe('Wrote notes/hello.txt.');
    expect(run.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(run.usage.costUsd).toBeGreaterThan(0);
    expect(run.diffStat).toEqual({ files: 1, added: 1, removed: 0 });
    expect(git(d.root, 'show', `${run.headCommit}:notes/hello.txt`)).toBe('hello from claude');
    expect(git(d.root, 'log', '-1', '--format=%B', run.headCommit)).toContain(`Svc-Run: ${run.id}`);
    const log = await logOf(d, run.id);
    expect(log).toContainEqual(expect.objectContaining({ kind: 'command', command: 'cat notes/hello.txt && echo shown', exitCode: 0 }));
    expect(log).toContainEqual(expect.objectContaining({ kind: 'file_change', path: 'notes/hello.txt', change: 'add' }));
    const comments = (await d.api('GET', `/api/v1/tasks/${taskId}/comments`)).body.data;
    expect(comments).toEqual([expect.objectContaining({ body: 'greeting written', author: 'cody' })]);
    expect((await d.api('GET', `/api/v1/tasks/${taskId}`)).body.data.status).toBe('review');
    // The prompt svc built reached the model: the task's title and how to report.
    expect(JSON.stringify(up.requests[seen]!.body.messages)).toContain('Write the greeting');
  });

  it('a CLI that exits non-zero fails the task, and the retry resumes its session', async () => {
    const clock = new FakeClock(Date.now());
    const d = await start(clock);
    await claudeAgent(d);
    up.script({ status: 400, error: { type: 'invalid_request_error', message: 'scripted refusal' } }, { blocks: [A.text('Second time lucky.')] });
    const seen = up.requests.length;
    const taskId = await task(d, 'Retry me', 'cody', 1);
    const first = await runOf(d, taskId, 1);
    expect(first.status).toBe('failed');
    expect(first.error).toContain('scripted refusal');
    expect((await d.api('GET', `/api/v1/tasks/${taskId}`)).body.data.status).toBe('failed');
    const queued = await runOf(d, taskId, 2, ['queued']);
    expect(queued.reason).toBe('retry');
    clock.advance(10_500);
    const second = await runOf(d, taskId, 2);
    expect(second.status, second.error).toBe('succeeded');
    expect(second.sessionId).toBe(first.sessionId);
    // The resumed conversation carries the first attempt's prompt: the same session, continued.
    const sent = JSON.stringify(up.requests.at(-1)!.body.messages);
    expect(up.requests.length).toBe(seen + 2);
    expect(sent.split('Retry me').length - 1).toBeGreaterThanOrEqual(2);
  });

  it("an API 429 with a long retry-after pauses the run for the provider's backoff (no reset given), then resumes it", async () => {
    const clock = new FakeClock(Date.now());
    const d = await start(clock);
    await claudeAgent(d);
    // With an API key Claude Code retries a short retry-after itself; a long one ends the run (api_error_status 429).
    up.script({ status: 429, headers: { 'retry-after': '3600' }, error: { type: 'rate_limit_error', message: 'scripted limit' } }, { blocks: [A.text('Done after the pause.')] });
    const taskId = await task(d, 'Limited', 'cody', 1);
    const paused = await runOf(d, taskId, 1, ['paused']);
    expect(paused).toMatchObject({ pauseReason: 'usage_limit', waitingFor: { kind: 'provider', provider: 'anthropic' } });
    // No reset from the CLI: the provider's backoff, from its first step (a minute).
    expect(Date.parse(paused.notBefore) - clock.now()).toBe(60_000);
    const status = (await d.api('GET', '/api/v1/auth/status')).body.data.providers.anthropic;
    expect(status).toMatchObject({ status: 'cooldown', pausedUntil: paused.notBefore, runsWaiting: 1 });
    expect((await d.api('GET', `/api/v1/tasks/${taskId}`)).body.data).toMatchObject({ status: 'assigned', retries: 0 });
    clock.advance(61_000);
    // The same conversation, continued, told why it resumes.
    await expectResumed(d, taskId, paused, 'Done after the pause.', () => up.requests.at(-1)!.body.messages);
  });

  it('a session Claude Code no longer has ("No conversation found") is replaced by a fresh one told the task\'s history', async () => {
    const d = await start();
    const { configDir } = await claudeAgent(d);
    up.script({ blocks: [A.text('First draft written.')] });
    const taskId = await task(d, 'Draft it', 'cody');
    const first = await runOf(d, taskId, 1);
    expect(first.status, first.error).toBe('succeeded');
    // Claude Code's transcripts are gone (as when a session was killed before it was saved).
    rmSync(join(configDir, 'projects'), { recursive: true, force: true });
    up.script({ blocks: [A.text('Second draft written.')] });
    const seen = up.requests.length;
    const approval = await d.api('POST', '/api/v1/approvals', { body: { taskId, requestedBy: 'reviewer', title: 'Good?' } });
    expect((await d.api('POST', `/api/v1/approvals/${approval.body.data.id}/reject`, { body: { feedback: 'Shorter.' } })).status).toBe(200);
    const second = await runOf(d, taskId, 2);
    expect(second.status, second.error).toBe('succeeded');
    expect(second.sessionId).not.toBe(first.sessionId);
    const log = JSON.stringify(await logOf(d, second.id));
    expect(log).toContain(`No conversation found with session ID: ${first.sessionId}`);
    expect(log).toContain('starting a fresh session with the task');
    // One model call: the fresh session's, with the history (the first run's summary) in its prompt.
    expect(up.requests.length).toBe(seen + 1);
    const sent = JSON.stringify(up.requests.at(-1)!.body.messages);
    expect(sent).toContain('What happened so far');
    expect(sent).toContain('First draft written.');
  });

  it('a model that never answers: the stall timeout ends the run, and cancel ends another at once', async () => {
    const clock = new FakeClock(Date.now());
    const d = await start(clock, { runner: { stallTimeoutSec: 60 } });
    await claudeAgent(d, { maxConcurrency: 2 });
    up.script({ hang: true }, { hang: true });
    const seen = up.requests.length;
    const stalled = await task(d, 'Stall', 'cody');
    const cancelled = await task(d, 'Cancel', 'cody');
    await until('both CLIs to ask the model', async () => up.requests.length >= seen + 2, 20_000);
    const live = await runOf(d, cancelled, 1, ['running']);
    const res = await d.api('POST', `/api/v1/runs/${live.id}/cancel`);
    expect(res.body.data.status).toBe('cancelled');
    clock.advance(61_000);
    const timedOut = await runOf(d, stalled, 1);
    expect(timedOut.status).toBe('timed_out');
    expect((await d.api('GET', `/api/v1/tasks/${cancelled}`)).body.data.status).toBe('assigned');
    expect((await d.api('GET', `/api/v1/tasks/${stalled}`)).body.data.status).toBe('failed');
  });
});

describe.skipIf(!claude)(`permission prompts of Claude Code ${claude?.version} as svc approvals (permissionMode ask)`, { timeout: AGENT_CLI_TEST_MS }, () => {
  let up: A.ScriptedAnthropic;
  beforeAll(async () => {
    up = await A.startScriptedAnthropic();
  });
  afterAll(async () => {
    await up?.close();
  });
  // Turns a failed test left unanswered must not answer the next test's CLI: one failure stays one.
  afterEach(() => up?.forget());

  /** cody with permissionMode ask, Bash not among its allowedTools: Claude Code asks svc before each command. */
  async function askingAgent(d: TestDaemon) {
    const env = claudeEnv(up.baseUrl);
    const r = await d.api('POST', '/api/v1/agents', {
      body: { name: 'cody', model: 'anthropic/claude-opus-4-8', allowedTools: ['Read'], runtime: { kind: 'claude', command: claude!.path, env, permissionMode: 'ask' } },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  }

  /** The pending permission request of a task, once Claude Code has asked. */
  async function asked(d: TestDaemon, taskId: string): Promise<any> {
    let a: any;
    await until(
      'Claude Code to ask for permission',
      async () => {
        a = ((await d.api('GET', `/api/v1/approvals?taskId=${taskId}&kind=permission`)).body.data as any[]).find((x) => x.status === 'pending');
        return a !== undefined;
      },
      30_000,
    );
    return a;
  }

  /** A command that leaves a file behind: whether it ran is whether the file is there. */
  const marking = () => {
    const file = join(temp('marker'), 'ran');
    return { file, command: `echo ran > ${file}` };
  };

  /**
   * A task whose model asks to run a marking command, then ends saying `after`: returns once
   * Claude Code has asked, with the request, the command and how many model requests came before.
   */
  async function askingTask(d: TestDaemon, after: string) {
    await askingAgent(d);
    const m = marking();
    const seen = up.requests.length;
    up.script({ blocks: [A.bash(m.command)] }, { blocks: [A.text(after)] });
    const taskId = await task(d, 'Mark it', 'cody');
    return { m, seen, taskId, a: await asked(d, taskId) };
  }

  it('a command runs only after a person approves it; "always" adds Bash to the allowedTools; deciding twice is 409', async () => {
    const d = await start();
    const { m, seen, taskId, a } = await askingTask(d, 'Ran it.');
    const live = await runOf(d, taskId, 1, ['running']);
    expect(a).toMatchObject({
      kind: 'permission',
      runId: live.id,
      agent: 'cody',
      tool: 'Bash',
      title: `cody wants to run Bash: ${m.command}`,
      payload: { tool: 'Bash', input: { command: m.command } },
    });
    expect(a.payload.toolUseId).toMatch(/^toolu_/);
    expect(existsSync(m.file)).toBe(false);
    expect((await d.api('GET', `/api/v1/tasks/${taskId}`)).body.data.status).toBe('in_progress');
    expect((await d.api('POST', `/api/v1/approvals/${a.id}/approve`, { body: { alwaysAllow: true } })).status).toBe(200);
    expect((await d.api('POST', `/api/v1/approvals/${a.id}/approve`, { body: {} })).status).toBe(409);
    const run = await runOf(d, taskId, 1);
    expect(run.status, run.error).toBe('succeeded');
    expect(readFileSync(m.file, 'utf8')).toBe('ran\n');
    expect((await d.api('GET', '/api/v1/agents/cody')).body.data.allowedTools).toEqual(['Read', 'Bash']);
    // The command's own result went back to the model.
    expect(A.toolResultsOf(up.requests[seen + 1]!)).toEqual([expect.not.stringContaining('denied')]);
    const log = await logOf(d, run.id);
    expect(log).toContainEqual(expect.objectContaining({ kind: 'command', command: m.command, exitCode: 0 }));
  });

  it('a rejected command never runs, and the model reads the note as the reason', async () => {
    const d = await start();
    const { m, seen, taskId, a } = await askingTask(d, 'Did not run it.');
    expect((await d.api('POST', `/api/v1/approvals/${a.id}/reject`, { body: { feedback: 'Use the test script instead.', resolvedBy: 'lead' } })).status).toBe(200);
    const run = await runOf(d, taskId, 1);
    expect(run.status, run.error).toBe('succeeded');
    expect(existsSync(m.file)).toBe(false);
    expect(A.toolResultsOf(up.requests[seen + 1]!)).toEqual(['lead refused: Use the test script instead.']);
    // Not a review: the task went on to review with the run, not back to pending with feedback.
    expect((await d.api('GET', `/api/v1/tasks/${taskId}`)).body.data).toMatchObject({ status: 'review', revisionCount: 0 });
  });

  it('nobody decides: runner.permissionTimeoutSec refuses it on the daemon clock, and the wait is no stall', async () => {
    const clock = new FakeClock(Date.now());
    const d = await start(clock, { runner: { permissionTimeoutSec: 90, stallTimeoutSec: 30 } });
    const { m, seen, taskId, a } = await askingTask(d, 'Gave up on it.');
    clock.advance(91_000);
    const run = await runOf(d, taskId, 1);
    expect(run.status, run.error).toBe('succeeded');
    expect(existsSync(m.file)).toBe(false);
    expect((await d.api('GET', `/api/v1/approvals/${a.id}`)).body.data).toMatchObject({ status: 'rejected', timedOut: true });
    expect(A.toolResultsOf(up.requests[seen + 1]!)[0]).toMatch(/^Nobody decided whether you may use Bash in time/);
  });

  it('a pending request survives a daemon restart: the resumed Claude Code asks again, waits on it, and runs once approved', async () => {
    const root = gitProject();
    const first = await startTestDaemon({ root, keepRoot: true, env: { PATH: process.env.PATH! } });
    daemons.push(first);
    await askingAgent(first);
    const m = marking();
    // The first run asks and is stopped with its daemon; the run queued again resumes the session and asks the same.
    up.script({ blocks: [A.bash(m.command)] }, { blocks: [A.bash(m.command)] }, { blocks: [A.text('Ran it at last.')] });
    const taskId = await task(first, 'Mark it', 'cody');
    const a = await asked(first, taskId);
    await first.close();
    daemons.splice(daemons.indexOf(first), 1);

    const second = await startTestDaemon({ root, env: { PATH: process.env.PATH! } });
    daemons.push(second);
    const resumed = await runOf(second, taskId, 2, ['running']);
    await until('the request to follow the resumed run', async () => (await second.api('GET', `/api/v1/approvals/${a.id}`)).body.data.runId === resumed.id, 30_000);
    expect((await second.api('GET', `/api/v1/approvals?taskId=${taskId}`)).body.data).toHaveLength(1);
    expect(existsSync(m.file)).toBe(false);
    expect((await second.api('POST', `/api/v1/approvals/${a.id}/approve`, { body: {} })).status).toBe(200);
    const run = await runOf(second, taskId, 2);
    expect(run.status, run.error).toBe('succeeded');
    expect(run.sessionId).toBe((await runOf(second, taskId, 1)).sessionId);
    expect(existsSync(m.file)).toBe(true);
  });
});

describe.skipIf(!codex)(`the runner driving Codex ${codex?.version}`, { timeout: AGENT_CLI_TEST_MS }, () => {
  let up: R.ScriptedResponses;
  beforeAll(async () => {
    up = await R.startScriptedResponses();
  });
  afterAll(async () => {
    await up?.close();
  });
  // Turns a failed test left unanswered must not answer the next test's CLI: one failure stays one.
  afterEach(() => up?.forget());

  async function codexAgent(d: TestDaemon, runtime: Record<string, unknown> = {}, home = temp('codex-home')) {
    const r = await d.api('POST', '/api/v1/agents', {
      body: {
        name: 'rex',
        model: 'openai/gpt-5.5',
        reasoning: 'low',
        runtime: { kind: 'codex', command: codex!.path, args: R.codexProviderArgs(up.url), env: { CODEX_HOME: home, SCRIPTED_KEY: 'sk-scripted' }, ...runtime },
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  }

  it('patches and commits a file, runs a command, leaves a note over MCP with its key, and sends the task to review', async () => {
    const d = await start();
    await codexAgent(d);
    const taskId = await task(d, 'Write the greeting', 'rex');
    up.script(
      { items: [R.applyPatch('*** Begin Patch\n*** Add File: notes/hello.txt\n+hello from codex\n*** End Patch\n')] },
      { items: [R.execCommand('cat notes/hello.txt && echo shown')] },
      { items: [R.svcTool('task_comment', { taskId, body: 'greeting written' })] },
      { items: [R.message('Wrote notes/hello.txt.')] },
    );
    const run = await runOf(d, taskId, 1);
    expect(run.status, run.error).toBe('succeeded');
    expect(run.summary).toBe('Wrote notes/hello.txt.');
    expect(run.usage.inputTokens).toBeGreaterThan(0);
    expect(run.usage.costUsd).toBe(null);
    expect(git(d.root, 'show', `${run.headCommit}:notes/hello.txt`)).toBe('hello from codex');
    const log = await logOf(d, run.id);
    expect(log).toContainEqual(expect.objectContaining({ kind: 'command', exitCode: 0 }));
    const comments = (await d.api('GET', `/api/v1/tasks/${taskId}/comments`)).body.data;
    expect(comments).toEqual([expect.objectContaining({ body: 'greeting written', author: 'rex' })]);
    expect((await d.api('GET', `/api/v1/tasks/${taskId}`)).body.data.status).toBe('review');
  });

  it('a usage limit pauses the run until the reset Codex says, then resumes the thread', async () => {
    const clock = new FakeClock(Date.now());
    const d = await start(clock);
    await codexAgent(d);
    const resetsAt = Math.floor(clock.now() / 1000) + 2 * 3600 + 17;
    up.script(
      { status: 429, error: { type: 'usage_limit_reached', message: 'The usage limit has been reached', plan_type: 'plus', resets_at: resetsAt } },
      { items: [R.message('Done after the reset.')] },
    );
    const taskId = await task(d, 'Limited', 'rex', 1);
    const paused = await runOf(d, taskId, 1, ['paused']);
    // Codex says the time to the minute: the end of that minute.
    const reset = new Date((Math.floor(resetsAt / 60) + 1) * 60_000).toISOString();
    expect(paused).toMatchObject({ pauseReason: 'usage_limit', notBefore: reset, waitingFor: { kind: 'provider', provider: 'openai', until: reset } });
    expect((await d.api('GET', '/api/v1/auth/status')).body.data.providers.openai).toMatchObject({ status: 'cooldown', pausedUntil: reset, runsWaiting: 1 });
    clock.advanceTo(Date.parse(reset) + 1_000);
    await expectResumed(d, taskId, paused, 'Done after the reset.', () => up.requests.at(-1)!.body.input);
  });

  it('ask: codex exec cannot ask, so it runs sandboxed (workspace-write, no network) and nothing becomes an approval', async () => {
    const d = await start();
    // A user's config.toml that opens the sandbox's network does not open it for ask.
    const home = temp('codex-home');
    writeFileSync(join(home, 'config.toml'), '[sandbox_workspace_write]\nnetwork_access = true\n');
    await codexAgent(d, { permissionMode: 'ask' }, home);
    const taskId = await task(d, 'Write in the sandbox', 'rex');
    const port = new URL(up.url).port;
    const probe = `node -e "require('net').connect(${port},'127.0.0.1').on('connect',()=>{console.log('network open');process.exit(0)}).on('error',e=>console.log('network shut',e.code))"`;
    up.script({ items: [R.execCommand(`echo sandboxed > inside.txt && cat inside.txt && ${probe}`)] }, { items: [R.message('Wrote it.')] });
    const run = await runOf(d, taskId, 1);
    expect(run.status, run.error).toBe('succeeded');
    expect(git(d.root, 'show', `${run.headCommit}:inside.txt`)).toBe('sandboxed');
    // The sandbox shut the network: even the daemon's own loopback is refused (EPERM).
    const ran = (await logOf(d, run.id)).find((i) => i.kind === 'command' && i.exitCode === 0);
    expect(ran.output).toMatch(/network shut EPERM/);
    expect((await d.api('GET', '/api/v1/approvals')).body.data).toEqual([]);
  });

  it('a turn that fails exits non-zero; the retry resumes the thread and counts only its own tokens', async () => {
    const clock = new FakeClock(Date.now());
    const d = await start(clock);
    await codexAgent(d);
    up.script({ items: [R.message('Thinking about it.')] });
    const taskId = await task(d, 'Retry me', 'rex', 2);
    const first = await runOf(d, taskId, 1);
    expect(first.status).toBe('succeeded');
    // Sent back by hand with a failure, so the next run resumes the same thread.
    expect((await d.api('POST', `/api/v1/tasks/${taskId}/transition`, { body: { to: 'failed' } })).status).toBe(200);
    up.script({ failed: { code: 'server_error', message: 'the scripted model broke down' } }, { items: [R.message('Done now.')] });
    expect((await d.api('POST', `/api/v1/tasks/${taskId}/runs`, { body: {} })).status).toBe(201);
    const second = await runOf(d, taskId, 2);
    expect(second.status).toBe('failed');
    expect(second.error).toContain('the scripted model broke down');
    expect(second.sessionId).toBe(first.sessionId);
    // The task used one retry (the run by hand): this one waits 10 s × 2^1.
    const queued = await runOf(d, taskId, 3, ['queued']);
    expect(Date.parse(queued.notBefore) - clock.now()).toBe(20_000);
    clock.advance(20_500);
    const third = await runOf(d, taskId, 3);
    expect(third.status, third.error).toBe('succeeded');
    expect(third.sessionId).toBe(first.sessionId);
    // Codex reports the thread's totals (the third run's stream says twice the first's): each run keeps its own share.
    expect(first.usage.inputTokens).toBeGreaterThan(0);
    expect(third.usage).toEqual(first.usage);
    const usage = (await d.api('GET', '/api/v1/usage?groupBy=task')).body.data[0];
    expect(usage.inputTokens).toBe(first.usage.inputTokens + second.usage.inputTokens + third.usage.inputTokens);
  });
});
