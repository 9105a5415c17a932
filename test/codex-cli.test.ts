import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCli } from './agent-clis.js';
import { startFakeUpstream, textChunks, type FakeUpstream, type Recorded } from './fake-upstream.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

// The real Codex CLI (pinned, scripts/agent-clis.mjs) with the configuration docs/chat.md gives,
// svc as its model provider (POST /v1/responses) and its MCP server (POST /mcp), in front of the
// scripted chat-completions upstream. Codex sends what it always sends (a namespace per MCP server,
// a freeform apply_patch, tool_search, web_search): svc must turn them into functions for the
// chat model and the model's calls back into the items Codex runs.

const codex = agentCli('codex');

let up: FakeUpstream;
let d: TestDaemon;

beforeAll(async () => {
  up = await startFakeUpstream();
  d = await startTestDaemon({ config: { providers: { fake: { baseUrl: up.url, apiKey: 'sk-codex-upstream-0123456789', models: ['m1'] } } } });
  await d.api('POST', '/api/v1/agents', { body: { name: 'coder', model: 'fake/m1', systemPrompt: 'You write code.' } });
});
afterAll(async () => {
  await d?.close();
  await up?.close();
});

/**
 * docs/chat.md's config.toml for Codex, as the page gives it (so the page cannot drift from what
 * works): svc's address, agent coder, and for the second run another model name.
 */
function codexHome(model?: string): string {
  const page = readFileSync(fileURLToPath(new URL('../docs/chat.md', import.meta.url)), 'utf8');
  const toml = /\*\*Codex\*\*[\s\S]*?```toml\n([\s\S]*?)```/.exec(page)?.[1];
  expect(toml, 'docs/chat.md gives a config.toml for Codex').toBeTruthy();
  let config = toml!.replaceAll('http://127.0.0.1:7420', d.url).replace('"x-svc-agent" = "alice"', '"x-svc-agent" = "coder"');
  if (model) config = config.replace(/^model = "[^"]*"/m, `model = "${model}"`);
  const home = join(d.root, `codex-home-${model?.replace(/\W/g, '_') ?? 'documented'}`);
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, 'config.toml'), config);
  return home;
}

interface CodexRun {
  code: number | null;
  lines: Record<string, any>[];
  stderr: string;
  ms: number;
}

/** `codex exec --json` with stdin closed (it waits for more input while stdin is open). */
function runCodex(home: string, cwd: string, prompt: string): Promise<CodexRun> {
  const started = Date.now();
  const child = spawn(codex!.path, ['exec', '--json', '--skip-git-repo-check', '--sandbox', 'workspace-write', '-C', cwd, prompt], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, CODEX_HOME: home, SERVICE_API_KEY: d.key, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  // A hung run is ended, by its own pid, so the test fails with what it said rather than timing out silently.
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const lines = out
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as Record<string, any>);
      resolve({ code, lines, stderr: err, ms: Date.now() - started });
    });
  });
}

const chunk = (delta: unknown, finish: string | null = null) => ({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta, finish_reason: finish }] });

/** One streamed tool call of `name`, with its arguments in two pieces as upstreams send them. */
const callStream = (id: string, name: string, args: unknown) => {
  const text = JSON.stringify(args);
  const half = Math.floor(text.length / 2);
  return [
    chunk({ role: 'assistant', tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: '' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: text.slice(0, half) } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: text.slice(half) } }] }),
    chunk({}, 'tool_calls'),
    { ...chunk({}), choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } },
  ];
};

const toolNames = (r: Recorded): string[] => (r.body.tools ?? []).map((t: { function: { name: string } }) => t.function.name);
const item = (run: CodexRun, type: string) => run.lines.filter((l) => l.type === 'item.completed' && l.item.type === type).map((l) => l.item);

describe.skipIf(!codex)(`Codex CLI ${codex?.version} on /v1/responses, svc as its MCP server too`, () => {
  it("runs a shell command, edits a file with apply_patch, finds and calls svc's MCP tool through tool_search, in one svc session per thread", async () => {
    const work = join(d.root, 'work');
    mkdirSync(work);
    writeFileSync(join(work, 'greeting.txt'), 'hello\n');
    const patch = ['*** Begin Patch', '*** Update File: greeting.txt', '@@', '-hello', '+hello from codex', '*** End Patch', ''].join('\n');
    up.requests.length = 0;
    up.script(
      { stream: callStream('call_sh', 'exec_command', { cmd: 'echo shell-ran-$((6*7))' }) },
      { stream: callStream('call_patch', 'apply_patch', { input: patch }) },
      { stream: callStream('call_search', 'tool_search', { query: 'create a task' }) },
      { stream: callStream('call_mcp', 'mcp__svc__task_create', { title: 'Made through Codex' }) },
      { stream: textChunks(['All ', 'done.']) },
    );
    const before = await d.daemon.app.events.lastId();

    // The documented model, one Codex knows: it offers the freeform apply_patch and tool_search (the agent's own model answers).
    const run = await runCodex(codexHome(), work, 'Run a command, fix the greeting, file a task.');
    console.log(`codex exec (5 model calls through svc): ${run.ms} ms`);
    expect(run.code, run.stderr + JSON.stringify(run.lines)).toBe(0);

    // What Codex did: the command ran, the patch applied, svc's MCP tool was called, the answer came.
    expect(item(run, 'command_execution')[0]).toMatchObject({ status: 'completed', exit_code: 0, aggregated_output: expect.stringContaining('shell-ran-42') });
    expect(item(run, 'file_change')[0]).toMatchObject({ status: 'completed', changes: [{ path: join(work, 'greeting.txt'), kind: 'update' }] });
    expect(readFileSync(join(work, 'greeting.txt'), 'utf8')).toBe('hello from codex\n');
    expect(item(run, 'mcp_tool_call')[0]).toMatchObject({ server: 'svc', tool: 'task_create', status: 'completed', error: null });
    expect(item(run, 'agent_message').at(-1)).toMatchObject({ text: 'All done.' });
    const tasks = (await d.api('GET', '/api/v1/tasks')).body.data;
    expect(tasks.map((t: { title: string }) => t.title)).toContain('Made through Codex');

    // What the chat model was given: functions only, each name valid for any OpenAI-compatible upstream.
    expect(up.requests).toHaveLength(5);
    for (const r of up.requests) {
      expect(r.path).toBe('/v1/chat/completions');
      for (const t of r.body.tools) expect(t.type).toBe('function');
      for (const name of toolNames(r)) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    }
    const first = toolNames(up.requests[0]!);
    expect(first).toEqual(expect.arrayContaining(['exec_command', 'apply_patch', 'tool_search']));
    expect(first).not.toContain('web_search'); // hosted: left out for a chat upstream
    // The tools the search loaded (svc's MCP server, a namespace) are offered from then on.
    expect(toolNames(up.requests[3]!)).toContain('mcp__svc__task_create');
    const sent = up.requests[4]!.body.messages;
    const patchCall = sent
      .flatMap((m: { tool_calls?: { function: { name: string; arguments: string } }[] }) => m.tool_calls ?? [])
      .find((c: { function: { name: string } }) => c.function.name === 'apply_patch');
    expect(JSON.parse(patchCall.function.arguments)).toEqual({ input: patch });

    // One session for the whole thread: Codex's thread id, started once, every model call in it.
    const thread = run.lines.find((l) => l.type === 'thread.started')!.thread_id as string;
    const fired = await d.daemon.app.events.since(before, 1000);
    expect(fired.filter((e) => e.name === 'session:started').map((e) => e.data)).toEqual([expect.objectContaining({ sessionId: thread, agent: 'coder' })]);
    const finished = fired.filter((e) => e.name === 'completion:finished');
    expect(finished).toHaveLength(5);
    for (const e of finished) expect(e.data).toMatchObject({ sessionId: thread, finishReason: expect.stringMatching(/^(tool_calls|stop)$/) });
  }, 90_000);

  it('gives a model Codex does not know its MCP server as a namespace, flattened, and maps the call back', async () => {
    const work = join(d.root, 'work-ns');
    mkdirSync(work);
    up.requests.length = 0;
    up.script({ stream: callStream('call_list', 'mcp__svc__task_list', {}) }, { stream: textChunks(['Listed.']) });
    const run = await runCodex(codexHome('fake/m1'), work, 'List the tasks.');
    console.log(`codex exec (2 model calls through svc): ${run.ms} ms`);
    expect(run.code, run.stderr + JSON.stringify(run.lines)).toBe(0);
    expect(item(run, 'mcp_tool_call')[0]).toMatchObject({ server: 'svc', tool: 'task_list', status: 'completed', error: null });
    const names = toolNames(up.requests[0]!);
    expect(names).toEqual(expect.arrayContaining(['mcp__svc__task_list', 'mcp__svc__task_create', 'exec_command']));
    expect(names.some((n) => n.startsWith('multi_agent_v1__'))).toBe(true); // Codex's sub-agent tools, a namespace too
    // The call went back to Codex as task_list in namespace mcp__svc, and its output came back for the same call id.
    const output = up.requests[1]!.body.messages.find((m: { role: string; tool_call_id?: string }) => m.role === 'tool' && m.tool_call_id === 'call_list');
    expect(output.content).toContain('tasks');
  }, 90_000);
});
