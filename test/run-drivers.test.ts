import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeDriver } from '../src/resources/runs/drivers/claude.js';
import { codexDriver } from '../src/resources/runs/drivers/codex.js';
import type { Driver, RunLogItem, RunSpec, StreamState } from '../src/resources/runs/types.js';
import { agentCli } from './agent-clis.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import * as A from './scripted-anthropic.js';
import * as R from './scripted-responses.js';

// The drivers against the real, pinned agent CLIs (test/agent-clis.ts), offline: each CLI talks to
// a scripted model server on 127.0.0.1 and to a real svc daemon's /mcp, in a temp git repository.
// The Invocation a driver builds is spawned as it is (plain child_process: the supervisor is not
// under test here) and its stdout read by the driver's own parser.
// SVC_RECORD_RUN_FIXTURES=1 writes each run's stdout to test/fixtures/runs/ (temp paths replaced),
// which the parsers' unit tests (test/unit/run-*.test.ts) read.

const claude = agentCli('claude');
const codex = agentCli('codex');
const RUN_KEY = 'run-key-for-driver-tests-0123456789';
const FIXTURES = fileURLToPath(new URL('./fixtures/runs/', import.meta.url));

let d: TestDaemon;
let taskId: string;
const temps: string[] = [];

const temp = (prefix: string): string => {
  const dir = mkdtempSync(join(tmpdir(), `svc-${prefix}-`));
  temps.push(dir);
  return dir;
};

function gitRepo(): string {
  const dir = temp('repo');
  execFileSync('git', ['init', '-q', dir]);
  return dir;
}

/** A skill folder as svc keeps them: <skillsDir>/<name>/SKILL.md. */
function skillDir(): string {
  const dir = join(temp('skills'), 'greet-in-latin');
  mkdirSync(dir);
  writeFileSync(join(dir, 'SKILL.md'), '---\nname: greet-in-latin\ndescription: Greets people in Latin (salve, valete).\n---\nSay "salve".\n');
  return dir;
}

beforeAll(async () => {
  d = await startTestDaemon({ config: { apiKeys: [{ name: 'run-key', key: RUN_KEY }] } });
  const t = await d.api('POST', '/api/v1/tasks', { body: { title: 'drive the agent CLIs' } });
  expect(t.status).toBe(201);
  taskId = t.body.data.id;
});

afterAll(async () => {
  await d?.close();
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

function runSpec(kind: 'claude' | 'codex', command: string, over: { args?: string[]; model?: string; resume?: string | null; prompt?: string; cwd?: string } = {}): RunSpec {
  const runDir = temp('run');
  chmodSync(runDir, 0o700);
  return {
    runId: 'run-1',
    taskId,
    agent: {
      name: 'ana',
      model: over.model ?? null,
      systemPrompt: 'You write tidy code.',
      maxTurns: 8,
      allowedTools: ['Bash'],
      allowedPaths: [],
      reasoning: 'low',
      displayName: 'Ana Lopez',
      email: 'ana@example.com',
      skills: [{ name: 'greet-in-latin', dir: skillDir() }],
    },
    runtime: { kind, command, args: over.args ?? [], permissionMode: 'acceptEdits' },
    cwd: over.cwd ?? gitRepo(),
    prompt: over.prompt ?? 'Write notes/hello.txt, show it, and leave a note on the task.',
    resumeSessionId: over.resume ?? null,
    mcp: { url: `${d.url}/mcp`, key: RUN_KEY },
    runDir,
  };
}

interface Ran {
  code: number | null;
  items: RunLogItem[];
  state: StreamState;
  stderr: string;
}

/**
 * Spawns what `driver` builds for `spec` with `env` (a fresh home, the model server), feeds its
 * stdout to the driver's parser and resolves when it exits. `record` names a fixture to write.
 * `onItem` may end the process (a test of a model that never answers).
 */
async function run(driver: Driver, spec: RunSpec, env: Record<string, string>, record?: string, onItem?: (item: RunLogItem, kill: () => void) => void): Promise<Ran> {
  const inv = driver.build(spec);
  for (const f of inv.files) writeFileSync(f.path, f.content, { mode: 0o600 });
  const home = temp('home');
  const child = spawn(inv.command, inv.args, {
    cwd: spec.cwd,
    env: { PATH: process.env.PATH ?? '', HOME: home, ...env, ...inv.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    // Its own process group, as the supervisor runs it: `codex` is a Node wrapper around the
    // native binary, and killing the wrapper alone leaves the binary holding stdout open.
    detached: true,
  });
  child.stdin.end(inv.stdin);
  const parser = driver.parser({ cwd: spec.cwd });
  const items: RunLogItem[] = [];
  const lines: string[] = [];
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
  };
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    for (const item of parser.line(line)) {
      items.push(item);
      onItem?.(item, kill);
    }
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  if (record && process.env.SVC_RECORD_RUN_FIXTURES === '1') {
    const text = lines.join('\n').replaceAll(spec.cwd, '/tmp/svc-fixture/repo').replaceAll(spec.runDir, '/tmp/svc-fixture/run').replaceAll(home, '/tmp/svc-fixture/home');
    writeFileSync(join(FIXTURES, `${record}.jsonl`), `${text}\n`);
  }
  return { code, items, state: parser.state(), stderr };
}

/**
 * For a model that never answers: once the CLI's session is up (its first `system` item), waits
 * (up to 5 s) for its request to reach the model server, then kills the process.
 */
function killOnceAsked(requests: unknown[]): (item: RunLogItem, kill: () => void) => void {
  const seen = requests.length;
  let armed = false;
  return (item, kill) => {
    if (item.kind !== 'system' || armed) return;
    armed = true;
    void (async () => {
      for (let i = 0; i < 250 && requests.length === seen; i++) await new Promise((res) => setTimeout(res, 20));
      kill();
    })();
  };
}

const of = <K extends RunLogItem['kind']>(items: RunLogItem[], kind: K) => items.filter((i): i is Extract<RunLogItem, { kind: K }> => i.kind === kind);

async function comments(): Promise<{ body: string; author: string }[]> {
  const r = await d.api('GET', `/api/v1/tasks/${taskId}/comments`);
  expect(r.status).toBe(200);
  return r.body.data;
}

describe.skipIf(!claude)(`Claude Code ${claude?.version} driven by the claude driver`, () => {
  let up: A.ScriptedAnthropic;
  let env: Record<string, string>;
  let first: { session: string; cwd: string };
  beforeAll(async () => {
    up = await A.startScriptedAnthropic();
    env = { ANTHROPIC_BASE_URL: up.baseUrl, ANTHROPIC_API_KEY: 'sk-scripted', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', CLAUDE_CONFIG_DIR: temp('claude-config') };
  });
  afterAll(async () => {
    await up?.close();
  });

  it('writes a file, runs a command, calls svc over MCP with the run key, and ends with its result', async () => {
    up.script(
      { blocks: [A.thinking('a file first'), A.text('Writing the file.'), A.write('notes/hello.txt', 'hello\nworld\n')] },
      { blocks: [A.bash('cat notes/hello.txt && echo shown')] },
      { blocks: [A.svcTool('task_comment', { taskId, body: 'from claude' })] },
      { blocks: [A.text('All done.')], usage: { input: 50, output: 9, cacheRead: 7, cacheWrite: 3 } },
    );
    const spec = runSpec('claude', claude!.path, { model: 'anthropic/claude-opus-4-8' });
    const r = await run(claudeDriver, spec, env, 'claude-success');
    expect(r.code, r.stderr).toBe(0);

    expect(readFileSync(join(spec.cwd, 'notes/hello.txt'), 'utf8')).toBe('hello\nworld\n');
    expect(of(r.items, 'file_change')).toEqual([{ kind: 'file_change', path: 'notes/hello.txt', change: 'add', added: 2, removed: 0 }]);
    expect(of(r.items, 'command')).toEqual([expect.objectContaining({ command: 'cat notes/hello.txt && echo shown', exitCode: 0, output: 'hello\nworld\nshown' })]);
    const call = of(r.items, 'tool_call').find((c) => c.tool === 'mcp__svc__task_comment')!;
    expect(call.input).toEqual({ taskId, body: 'from claude' });
    expect(of(r.items, 'tool_result').find((t) => t.id === call.id)).toMatchObject({ isError: false, output: expect.stringContaining('from claude') });
    // The note is on the task, written with the run's key (its name is the default author).
    expect(await comments()).toContainEqual(expect.objectContaining({ body: 'from claude', author: 'run-key' }));
    expect(of(r.items, 'thinking')).toEqual([{ kind: 'thinking', text: 'a file first' }]);
    expect(of(r.items, 'system')[0]!.text).toMatch(/session .* · model claude-opus-4-8 · permission mode acceptEdits · \d+ tools · MCP: svc connected/);

    expect(r.state).toMatchObject({ succeeded: true, error: null, summary: 'All done.', turns: 4, usageLimit: null, sessionId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    // The result's totals: three scripted messages of 10 + 5 tokens and one of 50 + 9.
    expect(r.state.usage).toMatchObject({ inputTokens: 80, outputTokens: 24, cacheReadTokens: 7, cacheWriteTokens: 3 });
    expect(r.state.usage.costUsd).toBeGreaterThan(0);
    expect(of(r.items, 'usage').at(-1)!.usage).toEqual(r.state.usage);
    first = { session: r.state.sessionId!, cwd: spec.cwd };

    // What the agent's fields became in the model request.
    const sent = up.requests[0]!.body;
    expect(sent.model).toBe('claude-opus-4-8');
    expect(sent.output_config).toEqual({ effort: 'low' });
    const system = JSON.stringify(sent.system);
    expect(system).toContain('You write tidy code.');
    expect(system).toContain('You are Ana Lopez <ana@example.com>, the svc agent \\"ana\\".');
    expect(sent.tools.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['Bash', 'Write', 'mcp__svc__task_comment']));
    // The assigned skill is offered to the model (as a one-skill plugin: greet-in-latin:greet-in-latin).
    expect(JSON.stringify(sent)).toContain('Greets people in Latin');
  });

  it('resumes the session: the model sees the earlier conversation', async () => {
    up.script({ blocks: [A.text('Resumed.')] });
    const seen = up.requests.length;
    // Claude Code keeps sessions by working directory: a retry resumes in the same worktree.
    const r = await run(claudeDriver, runSpec('claude', claude!.path, { resume: first.session, cwd: first.cwd, prompt: 'Go on.' }), env, 'claude-resume');
    expect(r.code, r.stderr).toBe(0);
    expect(r.state).toMatchObject({ sessionId: first.session, succeeded: true, summary: 'Resumed.', turns: 1 });
    expect(A.toolResultsOf(up.requests[seen]!)).toEqual(expect.arrayContaining(['hello\nworld\nshown']));
  });

  it('edits a file, reports a failing command with its exit code, and retries a 429 with a short retry-after', async () => {
    const cwd = gitRepo();
    writeFileSync(join(cwd, 'poem.txt'), 'roses\nare red\n');
    up.script(
      { status: 429, headers: { 'retry-after': '0' }, error: { type: 'rate_limit_error', message: 'busy' } },
      { blocks: [A.toolUse('Read', { file_path: join(cwd, 'poem.txt') })] },
      { blocks: [A.toolUse('Edit', { file_path: join(cwd, 'poem.txt'), old_string: 'are red\n', new_string: 'are red,\nviolets blue\n' })] },
      { blocks: [A.bash('exit 3')] },
      { blocks: [A.text('Edited; the check failed.')] },
    );
    const r = await run(claudeDriver, runSpec('claude', claude!.path, { cwd }), env, 'claude-edit');
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(cwd, 'poem.txt'), 'utf8')).toBe('roses\nare red,\nviolets blue\n');
    expect(of(r.items, 'file_change')).toEqual([{ kind: 'file_change', path: 'poem.txt', change: 'update', added: 2, removed: 1 }]);
    expect(of(r.items, 'command')).toEqual([expect.objectContaining({ command: 'exit 3', exitCode: 3, output: 'Exit code 3' })]);
    expect(of(r.items, 'system').map((s) => s.text)).toContainEqual(expect.stringMatching(/^API error 429 \(rate_limit\): retry 1 of \d+ in \d+ ms$/));
    expect(r.state).toMatchObject({ succeeded: true, summary: 'Edited; the check failed.', usageLimit: null });
  });

  it('a 429 ends the run with exit 1: the parser says error and usage limit', async () => {
    up.script({ status: 429, headers: { 'retry-after': '3600' }, error: { type: 'rate_limit_error', message: 'slow down' } });
    const r = await run(claudeDriver, runSpec('claude', claude!.path), env, 'claude-429');
    expect(r.code).toBe(1);
    expect(r.state).toMatchObject({ succeeded: false, summary: null, usageLimit: { resetsAt: null, status: 429 }, error: expect.stringContaining('429') });
    expect(of(r.items, 'error').map((e) => e.message)).toEqual([expect.stringContaining('slow down'), r.state.error]);
  });

  it('a model that never answers leaves the run undecided until it is killed', async () => {
    up.script({ hang: true });
    const seen = up.requests.length;
    const r = await run(claudeDriver, runSpec('claude', claude!.path), env, undefined, killOnceAsked(up.requests));
    expect(r.code).toBe(null);
    expect(up.requests.length).toBe(seen + 1);
    expect(r.state).toMatchObject({ succeeded: null, error: null, summary: null });
  });
});

describe.skipIf(!codex)(`Codex ${codex?.version} driven by the codex driver`, () => {
  let up: R.ScriptedResponses;
  let env: Record<string, string>;
  let first: { thread: string; cwd: string };
  beforeAll(async () => {
    up = await R.startScriptedResponses();
    env = { CODEX_HOME: temp('codex-home'), SCRIPTED_KEY: 'sk-scripted' };
  });
  afterAll(async () => {
    await up?.close();
  });

  it('writes a file, runs a command, calls svc over MCP with the run key, and ends with its last message', async () => {
    up.script(
      { items: [R.reasoning('a file first'), R.applyPatch('*** Begin Patch\n*** Add File: notes/hello.txt\n+hello\n+world\n*** End Patch\n')] },
      { items: [R.execCommand('cat notes/hello.txt && echo shown')] },
      { items: [R.svcTool('task_comment', { taskId, body: 'from codex' })] },
      { items: [R.message('All done.')] },
    );
    const spec = runSpec('codex', codex!.path, { model: 'openai/gpt-5.5', args: R.codexProviderArgs(up.url) });
    const r = await run(codexDriver, spec, env, 'codex-success');
    expect(r.code, r.stderr).toBe(0);

    expect(readFileSync(join(spec.cwd, 'notes/hello.txt'), 'utf8')).toBe('hello\nworld\n');
    expect(of(r.items, 'file_change')).toEqual([{ kind: 'file_change', path: 'notes/hello.txt', change: 'add', added: null, removed: null }]);
    const commands = of(r.items, 'command');
    expect(commands.at(-1)).toMatchObject({ command: expect.stringContaining('cat notes/hello.txt && echo shown'), exitCode: 0, output: 'hello\nworld\nshown\n' });
    expect(commands[0]).toMatchObject({ id: commands.at(-1)!.id, exitCode: null, output: null });
    const call = of(r.items, 'tool_call').find((c) => c.tool === 'mcp__svc__task_comment')!;
    expect(call.input).toEqual({ taskId, body: 'from codex' });
    expect(of(r.items, 'tool_result').find((t) => t.id === call.id)).toMatchObject({ isError: false, output: expect.stringContaining(`added to task ${taskId}`) });
    expect(await comments()).toContainEqual(expect.objectContaining({ body: 'from codex', author: 'run-key' }));
    expect(of(r.items, 'thinking')).toEqual([{ kind: 'thinking', text: 'a file first' }]);

    expect(r.state).toMatchObject({ succeeded: true, error: null, summary: 'All done.', turns: 1, usageLimit: null, sessionId: expect.any(String) });
    // Four responses of 100 input tokens (40 of them cached) and 7 output tokens.
    expect(r.state.usage).toEqual({ inputTokens: 240, outputTokens: 28, cacheReadTokens: 160, cacheWriteTokens: 0, costUsd: null });
    first = { thread: r.state.sessionId!, cwd: spec.cwd };

    const sent = up.requests[0]!.body;
    expect(sent.model).toBe('gpt-5.5');
    expect(sent.reasoning).toMatchObject({ effort: 'low' });
    const input = JSON.stringify(sent.input);
    expect(input).toContain('You write tidy code.');
    expect(input).toContain('You are Ana Lopez <ana@example.com>, the svc agent \\"ana\\".');
    expect(input).toContain(join(spec.agent.skills[0]!.dir, 'SKILL.md'));
  });

  it('resumes the thread (`exec resume <id> -`): the model sees the earlier conversation', async () => {
    up.script({ items: [R.message('Resumed.')] });
    const seen = up.requests.length;
    const r = await run(
      codexDriver,
      runSpec('codex', codex!.path, { model: 'openai/gpt-5.5', args: R.codexProviderArgs(up.url), resume: first.thread, cwd: first.cwd, prompt: 'Go on.' }),
      env,
      'codex-resume',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.state).toMatchObject({ sessionId: first.thread, succeeded: true, summary: 'Resumed.' });
    expect(R.toolOutputsOf(up.requests[seen]!).join('\n')).toContain('hello\nworld\nshown');
  });

  it('updates a file and reports a failing command with its exit code', async () => {
    const cwd = gitRepo();
    writeFileSync(join(cwd, 'poem.txt'), 'roses\nare red\n');
    up.script(
      { items: [R.applyPatch('*** Begin Patch\n*** Update File: poem.txt\n@@\n roses\n-are red\n+are red,\n+violets blue\n*** End Patch\n')] },
      { items: [R.execCommand('exit 4')] },
      { items: [R.message('Edited; the check failed.')] },
    );
    const r = await run(codexDriver, runSpec('codex', codex!.path, { model: 'openai/gpt-5.5', args: R.codexProviderArgs(up.url), cwd }), env, 'codex-edit');
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(cwd, 'poem.txt'), 'utf8')).toBe('roses\nare red,\nviolets blue\n');
    expect(of(r.items, 'file_change')).toEqual([{ kind: 'file_change', path: 'poem.txt', change: 'update', added: null, removed: null }]);
    expect(of(r.items, 'command').at(-1)).toMatchObject({ command: expect.stringContaining('exit 4'), exitCode: 4 });
    expect(r.state).toMatchObject({ succeeded: true, summary: 'Edited; the check failed.' });
  });

  it('a usage limit fails the turn with exit 1: the parser says error and when the limit resets', async () => {
    const resetsAt = Math.floor(Date.now() / 1000) + 3 * 3600 + 17;
    up.script({ status: 429, error: { type: 'usage_limit_reached', message: 'The usage limit has been reached', plan_type: 'plus', resets_at: resetsAt } });
    // A model Codex has no metadata for: its stream opens with a (harmless) error item.
    const r = await run(codexDriver, runSpec('codex', codex!.path, { model: 'openai/scripted-model', args: R.codexProviderArgs(up.url) }), env, 'codex-usage-limit');
    expect(r.code).toBe(1);
    expect(of(r.items, 'error')[0]!.message).toMatch(/^Model metadata for `scripted-model` not found/);
    // Codex says the time to the minute: the parser rounds up to the end of that minute.
    const expected = new Date((Math.floor(resetsAt / 60) + 1) * 60_000).toISOString();
    expect(r.state).toMatchObject({ succeeded: false, error: expect.stringContaining('usage limit'), usageLimit: { resetsAt: expected, status: null } });
    expect(of(r.items, 'rate_limit')).toEqual([{ kind: 'rate_limit', status: 'rejected', resetsAt: expected, limitType: null }]);
  });

  it('a response that fails in the stream fails the turn: exit 1, the error in the state', async () => {
    up.script({ failed: { code: 'server_error', message: 'the scripted model broke down' } });
    const r = await run(codexDriver, runSpec('codex', codex!.path, { model: 'openai/gpt-5.5', args: R.codexProviderArgs(up.url) }), env);
    expect(r.code).toBe(1);
    expect(r.state).toMatchObject({ succeeded: false, error: expect.stringContaining('the scripted model broke down'), usageLimit: null });
  });

  it('a model that never answers leaves the run undecided until it is killed', async () => {
    up.script({ hang: true });
    const seen = up.requests.length;
    const r = await run(codexDriver, runSpec('codex', codex!.path, { model: 'openai/gpt-5.5', args: R.codexProviderArgs(up.url) }), env, undefined, killOnceAsked(up.requests));
    expect(r.code).toBe(null);
    expect(up.requests.length).toBe(seen + 1);
    expect(r.state).toMatchObject({ succeeded: null, error: null, summary: null, turns: 1 });
  });
});
