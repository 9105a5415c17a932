import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ITEM_TEXT_MAX } from '../../src/resources/runs/drivers/bounds.js';
import { CODEX_ARG_MAX, codexDriver, codexResetTime, tomlString } from '../../src/resources/runs/drivers/codex.js';
import { FakeClock } from '../fake-clock.js';
import { feed, FIXTURE_CWD, fixtureLines, ofKind, spec } from './run-fixtures.js';

const temps: string[] = [];
const dir = (git: boolean): string => {
  const d = mkdtempSync(join(tmpdir(), 'svc-codex-unit-'));
  temps.push(d);
  if (git) mkdirSync(join(d, '.git'));
  return d;
};
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

const TZ = process.env.TZ;
afterEach(() => {
  if (TZ === undefined) delete process.env.TZ;
  else process.env.TZ = TZ;
});

describe('codex driver: the invocation', () => {
  const agent = {
    model: 'openai/gpt-5.5',
    systemPrompt: 'Be brief.',
    maxTurns: 12,
    allowedTools: ['Bash'],
    allowedPaths: ['/data/shared'],
    reasoning: 'high' as const,
    displayName: 'Ana Lopez',
    email: 'ana@example.com',
    skills: [{ name: 'greet', dir: '/w/skills/greet' }],
  };

  it('maps the agent onto exec options, runtime.args before the prompt (`-`, read from stdin)', () => {
    const cwd = dir(true);
    const inv = codexDriver.build(spec({ cwd, agent, runtime: { kind: 'codex', command: '/usr/bin/codex', args: ['-c', 'model_provider="local"'] } }));
    expect(inv.command).toBe('/usr/bin/codex');
    expect(inv.args).toEqual([
      'exec',
      '--json',
      '--model=gpt-5.5',
      '--sandbox=workspace-write',
      `--cd=${cwd}`,
      '--add-dir=/data/shared',
      '--config=model_reasoning_effort="high"',
      `--config=developer_instructions=${JSON.stringify(
        'Be brief.\n\nYou are Ana Lopez <ana@example.com>, the svc agent "ana".\n\nSkills assigned to you (each a folder with a SKILL.md; read it before the work it covers):\n- greet: /w/skills/greet/SKILL.md',
      )}`,
      '--config=mcp_servers.svc.url="http://127.0.0.1:7420/mcp"',
      '--config=mcp_servers.svc.bearer_token_env_var="SVC_API_KEY"',
      '--config=mcp_servers.svc.tool_timeout_sec=600',
      '-c',
      'model_provider="local"',
      '-',
    ]);
    expect(inv.stdin).toBe('Do the task.');
    // The run key reaches Codex only through its environment (bearer_token_env_var).
    expect(inv.env).toEqual({ SVC_API_KEY: 'run-key-1' });
    expect(inv.args.join(' ')).not.toContain('run-key-1');
    expect(inv.files).toEqual([]);
  });

  it('resumes with `exec … resume <id> -`, the options before the subcommand', () => {
    const inv = codexDriver.build(spec({ cwd: dir(true), resumeSessionId: '01a21ac4-a4e6-7963-b755-2feb50e40c4c', runtime: { kind: 'codex', args: ['-c', 'x=1'] } }));
    expect(inv.args.slice(-5)).toEqual(['-c', 'x=1', 'resume', '01a21ac4-a4e6-7963-b755-2feb50e40c4c', '-']);
  });

  it('skips the git repository check only outside a repository', () => {
    expect(codexDriver.build(spec({ cwd: dir(true) })).args).not.toContain('--skip-git-repo-check');
    const nested = join(dir(true), 'a', 'b');
    mkdirSync(nested, { recursive: true });
    expect(codexDriver.build(spec({ cwd: nested })).args).not.toContain('--skip-git-repo-check');
    expect(codexDriver.build(spec({ cwd: dir(false) })).args).toContain('--skip-git-repo-check');
  });

  it('maps permission modes to sandboxes and reasoning to efforts; no model, no --model', () => {
    const cwd = dir(true);
    const sandbox = (permissionMode: 'ask' | 'acceptEdits' | 'bypass') => codexDriver.build(spec({ cwd, runtime: { permissionMode } })).args.find((a) => a.startsWith('--sandbox'));
    expect([sandbox('ask'), sandbox('acceptEdits'), sandbox('bypass')]).toEqual(['--sandbox=workspace-write', '--sandbox=workspace-write', '--sandbox=danger-full-access']);
    // codex exec cannot ask: ask is the sandbox with the network shut and approvals off, whatever config.toml says.
    const ask = codexDriver.build(spec({ cwd, runtime: { permissionMode: 'ask' } })).args;
    expect(ask).toEqual(expect.arrayContaining(['--config=sandbox_workspace_write.network_access=false', '--config=approval_policy="never"']));
    expect(codexDriver.build(spec({ cwd })).args.some((a) => a.includes('network_access') || a.includes('approval_policy'))).toBe(false);
    expect(codexDriver.build(spec({ cwd, agent: { reasoning: 'off' } })).args).toContain('--config=model_reasoning_effort="none"');
    const bare = codexDriver.build(spec({ cwd })).args;
    expect(bare.some((a) => a.startsWith('--model') || a.includes('reasoning'))).toBe(false);
    expect(bare).toContain(`--config=developer_instructions=${JSON.stringify('You are the svc agent "ana".')}`);
  });

  it('developer instructions too long for one argument open the prompt on stdin instead', () => {
    const long = 'rule\n'.repeat(CODEX_ARG_MAX / 4);
    const inv = codexDriver.build(spec({ cwd: dir(true), agent: { systemPrompt: long } }));
    expect(inv.args.some((a) => a.includes('developer_instructions'))).toBe(false);
    expect(inv.stdin.startsWith(`<developer_instructions>\n${long.trim()}\n\nYou are the svc agent "ana".\n</developer_instructions>\n\nDo the task.`)).toBe(true);
    expect(Math.max(...inv.args.map((a) => Buffer.byteLength(a)))).toBeLessThan(CODEX_ARG_MAX);
  });

  it('writes TOML strings Codex can read back (quotes, newlines, DEL, lone surrogates)', () => {
    expect(tomlString('say "hi"\n\tnow\\')).toBe('"say \\"hi\\"\\n\\tnow\\\\"');
    expect(tomlString('a\u007fb')).toBe('"a\\u007fb"');
    expect(tomlString('x\uD800y')).toBe('"x\uFFFDy"');
  });
});

describe('codexResetTime: the reset Codex words as a local time, to the minute', () => {
  const now = new FakeClock(Date.parse('2030-01-01T09:00:00.000Z')).now();

  it('reads today\'s "5:10 AM" and another day\'s "Mar 17th, 2030 5:46 PM" as the end of that minute', () => {
    process.env.TZ = 'UTC';
    expect(codexResetTime('… or try again at 5:10 AM.', now)).toBe('2030-01-01T05:11:00.000Z');
    expect(codexResetTime('… or try again at Mar 17th, 2030 5:46 PM.', now)).toBe('2030-03-17T17:47:00.000Z');
    expect(codexResetTime('try again at 12:05 AM.', now)).toBe('2030-01-01T00:06:00.000Z');
    expect(codexResetTime('try again at 12:59 PM.', now)).toBe('2030-01-01T13:00:00.000Z');
    expect(codexResetTime('try again at Feb 1st, 2030 11:59 PM.', now)).toBe('2030-02-02T00:00:00.000Z');
    expect(codexResetTime('try again at Feb 22nd, 2030 3:00 AM.', now)).toBe('2030-02-22T03:01:00.000Z');
  });

  it("in the time zone Codex wrote it in (this machine's)", () => {
    process.env.TZ = 'America/New_York';
    expect(codexResetTime('… or try again at 5:10 AM.', now)).toBe('2030-01-01T10:11:00.000Z');
  });

  it('has no reset when the message says none or garbles it', () => {
    expect(codexResetTime("You've hit your usage limit. … or try again later.", now)).toBeNull();
    expect(codexResetTime('try again at Foo 3rd, 2030 5:46 PM.', now)).toBeNull();
  });
});

describe('codex driver: the stream (recorded from Codex 0.171.0)', () => {
  it('reads a run that patched a file, ran a command and called svc', () => {
    const parser = codexDriver.parser({ cwd: FIXTURE_CWD });
    const lines = fixtureLines('codex-success');
    const items = feed(parser, lines);
    expect(items.map((i) => i.kind)).toEqual(['system', 'thinking', 'file_change', 'command', 'command', 'tool_call', 'tool_result', 'text', 'usage']);
    expect(ofKind(items, 'file_change')).toEqual([{ kind: 'file_change', path: 'notes/hello.txt', change: 'add', added: null, removed: null }]);
    // A command is reported as it starts and again as it ends, by the same id.
    expect(ofKind(items, 'command')).toEqual([
      { kind: 'command', id: 'item_2', command: "/bin/bash -lc 'cat notes/hello.txt && echo shown'", exitCode: null, output: null, durationMs: null },
      { kind: 'command', id: 'item_2', command: "/bin/bash -lc 'cat notes/hello.txt && echo shown'", exitCode: 0, output: 'hello\nworld\nshown\n', durationMs: null },
    ]);
    expect(ofKind(items, 'tool_call')).toEqual([{ kind: 'tool_call', id: 'item_3', tool: 'mcp__svc__task_comment', input: { taskId: expect.any(String), body: 'from codex' } }]);
    expect(ofKind(items, 'tool_result')).toEqual([{ kind: 'tool_result', id: 'item_3', tool: 'mcp__svc__task_comment', output: expect.stringMatching(/^Note .* added to task /), isError: false }]);
    expect(parser.state()).toEqual({
      sessionId: JSON.parse(lines[0]!).thread_id,
      usage: { inputTokens: 240, outputTokens: 28, cacheReadTokens: 160, cacheWriteTokens: 0, costUsd: null },
      turns: 1,
      summary: 'All done.',
      succeeded: true,
      error: null,
      usageLimit: null,
      idle: true,
    });
  });

  it('is idle between a completed turn and the next one (where a run over its budget stops)', () => {
    const parser = codexDriver.parser({ cwd: FIXTURE_CWD });
    const lines = fixtureLines('codex-success');
    const idle = lines.map((l) => (parser.line(l), parser.state().idle));
    const completed = lines.findIndex((l) => JSON.parse(l).type === 'turn.completed');
    expect(idle.indexOf(true)).toBe(completed);
    parser.line(JSON.stringify({ type: 'turn.started' }));
    expect(parser.state().idle).toBe(false);
  });

  it('reads an update and a failing command', () => {
    const items = feed(codexDriver.parser({ cwd: FIXTURE_CWD }), fixtureLines('codex-edit'));
    expect(ofKind(items, 'file_change')).toEqual([{ kind: 'file_change', path: 'poem.txt', change: 'update', added: null, removed: null }]);
    expect(ofKind(items, 'command').at(-1)).toMatchObject({ command: "/bin/bash -lc 'exit 4'", exitCode: 4, output: '' });
  });

  it("a resumed thread reports the thread's totals (the earlier run's tokens included)", () => {
    const parser = codexDriver.parser();
    feed(parser, fixtureLines('codex-resume'));
    expect(parser.state()).toMatchObject({ sessionId: JSON.parse(fixtureLines('codex-success')[0]!).thread_id, succeeded: true, summary: 'Resumed.', turns: 1 });
    expect(parser.state().usage).toEqual({ inputTokens: 300, outputTokens: 35, cacheReadTokens: 200, cacheWriteTokens: 0, costUsd: null });
  });

  it('a usage limit: the harmless metadata error does not fail the run, the limit does, with its reset', () => {
    process.env.TZ = 'UTC';
    const parser = codexDriver.parser({ clock: new FakeClock(Date.parse('2030-01-01T01:00:00.000Z')) });
    const lines = fixtureLines('codex-usage-limit');
    const items = feed(parser, lines.slice(0, 3));
    expect(items).toEqual([
      { kind: 'system', text: `Codex thread ${JSON.parse(lines[0]!).thread_id}` },
      { kind: 'error', message: expect.stringMatching(/^Model metadata for `scripted-model` not found/) },
    ]);
    expect(parser.state()).toMatchObject({ succeeded: null, error: null, usageLimit: null });
    const rest = feed(parser, lines.slice(3));
    const when = /try again at (\d+):(\d+) ([AP]M)/.exec(lines[3]!)!;
    const hour = (Number(when[1]) % 12) + (when[3] === 'PM' ? 12 : 0);
    const resetsAt = new Date(Date.UTC(2030, 0, 1, hour, Number(when[2]) + 1)).toISOString();
    expect(rest.map((i) => i.kind)).toEqual(['error', 'rate_limit', 'error']);
    expect(ofKind(rest, 'rate_limit')).toEqual([{ kind: 'rate_limit', status: 'rejected', resetsAt, limitType: null }]);
    expect(parser.state()).toMatchObject({ succeeded: false, error: expect.stringMatching(/^You’ve hit your usage limit\./), usageLimit: { resetsAt, status: null } });
  });
});

describe('codex driver: the stream, lines made from its schema', () => {
  const line = (o: unknown) => JSON.stringify(o);

  it("a turn that failed on a 429 after Codex's retries is a usage limit without a reset", () => {
    const parser = codexDriver.parser();
    parser.line(line({ type: 'turn.started' }));
    parser.line(line({ type: 'turn.failed', error: { message: 'exceeded retry limit, last status: 429 Too Many Requests' } }));
    expect(parser.state()).toMatchObject({ succeeded: false, error: 'exceeded retry limit, last status: 429 Too Many Requests', usageLimit: { resetsAt: null, status: 429 } });
  });

  it("Codex's quota wording is a usage limit too", () => {
    const parser = codexDriver.parser();
    parser.line(line({ type: 'error', message: 'Quota exceeded. Check your plan and billing details.' }));
    expect(parser.state().usageLimit).toEqual({ resetsAt: null, status: null });
  });

  it('a transient error (a reconnect) is logged and changes nothing; a later completed turn succeeds', () => {
    const parser = codexDriver.parser();
    parser.line(line({ type: 'turn.started' }));
    expect(parser.line(line({ type: 'error', message: 'Reconnecting... 1/5 (stream disconnected before completion)' }))).toEqual([
      { kind: 'error', message: 'Reconnecting... 1/5 (stream disconnected before completion)' },
    ]);
    expect(parser.state()).toMatchObject({ succeeded: null, error: null, usageLimit: null });
    parser.line(line({ type: 'turn.completed', usage: { input_tokens: 10, cached_input_tokens: 4, cache_write_input_tokens: 2, output_tokens: 3 } }));
    expect(parser.state()).toMatchObject({ succeeded: true, turns: 1, usage: { inputTokens: 4, outputTokens: 3, cacheReadTokens: 4, cacheWriteTokens: 2, costUsd: null } });
  });

  it('reads a failed MCP call, a failed patch, a plan and a web search', () => {
    const parser = codexDriver.parser({ cwd: '/w/repo' });
    const items = [
      {
        type: 'item.completed',
        item: { id: 'i1', type: 'mcp_tool_call', server: 'svc', tool: 'task_get', arguments: { taskId: 'x' }, result: null, error: { message: 'task not found' }, status: 'failed' },
      },
      { type: 'item.completed', item: { id: 'i2', type: 'file_change', changes: [{ path: '/w/repo/a.txt', kind: 'update' }], status: 'failed' } },
      {
        type: 'item.started',
        item: {
          id: 'i3',
          type: 'todo_list',
          items: [
            { text: 'read', completed: true },
            { text: 'write', completed: false },
          ],
        },
      },
      { type: 'item.completed', item: { id: 'i3', type: 'todo_list', items: [] } },
      { type: 'item.completed', item: { id: 'i4', type: 'web_search', query: 'vitest fake timers' } },
      { type: 'item.updated', item: { id: 'i5', type: 'command_execution', command: 'ls', aggregated_output: 'partial', status: 'in_progress' } },
    ].flatMap((o) => parser.line(line(o)));
    expect(items).toEqual([
      { kind: 'tool_result', id: 'i1', tool: 'mcp__svc__task_get', output: 'task not found', isError: true },
      { kind: 'error', message: 'patch not applied: /w/repo/a.txt' },
      { kind: 'system', text: 'plan:\n[x] read\n[ ] write' },
      { kind: 'tool_call', id: 'i4', tool: 'web_search', input: { query: 'vitest fake timers' } },
    ]);
  });

  it('keeps unknown and malformed lines raw, never throws, and bounds what it keeps', () => {
    const parser = codexDriver.parser();
    expect(parser.line('')).toEqual([]);
    expect(parser.line('WARNING: something on stdout')).toEqual([{ kind: 'raw', text: 'WARNING: something on stdout' }]);
    expect(parser.line('{"type":"thread.resumed"}')).toEqual([{ kind: 'raw', text: '{"type":"thread.resumed"}' }]);
    expect(parser.line('{"type":"item.completed","item":{"id":"i","type":"collab_tool_call"}}')[0]!.kind).toBe('raw');
    expect(parser.line('{"type":"item.completed","item":"x"}')[0]!.kind).toBe('raw');
    expect(parser.line('{"type":"thread.started","thread_id":7}')[0]!.kind).toBe('raw');
    for (const l of [
      '{"type":"turn.completed","usage":"lots"}',
      '{"type":"turn.failed","error":null}',
      '{"type":"item.completed","item":{"type":"agent_message","text":{"a":1}}}',
      '{"type":"item.completed","item":{"type":"file_change","changes":[null,{"path":3}]}}',
      '{"type":"toString"}',
    ]) {
      expect(() => parser.line(l), l).not.toThrow();
    }
    const huge = parser.line(line({ type: 'item.completed', item: { id: 'i', type: 'agent_message', text: 'x'.repeat(10 * 1024 * 1024) } }));
    expect(huge[0]!.kind).toBe('raw');
    const deep = parser.line(`{"type":"item.completed","item":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`);
    expect(deep[0]!.kind).toBe('raw');
    const long = parser.line(line({ type: 'item.completed', item: { id: 'i', type: 'command_execution', command: 'yes', aggregated_output: 'y\n'.repeat(100_000), exit_code: 0 } }));
    expect(Buffer.byteLength((long[0] as { output: string }).output)).toBeLessThan(ITEM_TEXT_MAX + 100);
  });
});
