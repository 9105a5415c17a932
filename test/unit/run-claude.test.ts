import { describe, expect, it } from 'vitest';
import { claudeDriver } from '../../src/resources/runs/drivers/claude.js';
import { ITEM_TEXT_MAX } from '../../src/resources/runs/drivers/bounds.js';
import { feed, FIXTURE_CWD, fixtureLines, ofKind, spec } from './run-fixtures.js';

describe('claude driver: the invocation', () => {
  it('maps every agent field onto its flag, svc flags first, runtime.args after --verbose', () => {
    const inv = claudeDriver.build(
      spec({
        agent: {
          model: 'anthropic/claude-opus-4-8',
          systemPrompt: 'Be brief.',
          maxTurns: 12,
          allowedTools: ['Bash(git *)', 'Edit'],
          allowedPaths: ['/data/shared'],
          reasoning: 'high',
          displayName: 'Ana Lopez',
          email: 'ana@example.com',
          skills: [{ name: 'greet', dir: '/w/skills/greet' }],
        },
        runtime: { command: '/usr/bin/claude', args: ['--fallback-model=claude-haiku-4-5'] },
        resumeSessionId: '0a7ecc9d-5aa5-409d-ac48-505abe900c60',
      }),
    );
    expect(inv.command).toBe('/usr/bin/claude');
    expect(inv.args).toEqual([
      '-p',
      '--output-format=stream-json',
      '--model=claude-opus-4-8',
      '--max-turns=12',
      '--append-system-prompt-file=/w/run/claude-system-prompt.md',
      '--allowedTools=Bash(git *)',
      '--allowedTools=Edit',
      '--allowedTools=mcp__svc',
      '--add-dir=/data/shared',
      '--permission-mode=acceptEdits',
      '--mcp-config=/w/run/claude-mcp.json',
      '--strict-mcp-config',
      '--plugin-dir=/w/skills/greet',
      '--effort=high',
      '--resume=0a7ecc9d-5aa5-409d-ac48-505abe900c60',
      '--verbose',
      '--fallback-model=claude-haiku-4-5',
    ]);
    expect(inv.stdin).toBe('Do the task.');
    expect(inv.env).toEqual({ SVC_API_KEY: 'run-key-1' });
    expect(inv.files).toEqual([
      { path: '/w/run/claude-mcp.json', content: expect.any(String) },
      { path: '/w/run/claude-system-prompt.md', content: 'Be brief.\n\nYou are Ana Lopez <ana@example.com>, the svc agent "ana".' },
    ]);
    // The key stays out of the file: Claude Code expands ${SVC_API_KEY} from its own environment.
    expect(JSON.parse(inv.files[0]!.content)).toEqual({
      mcpServers: { svc: { type: 'http', url: 'http://127.0.0.1:7420/mcp', headers: { Authorization: 'Bearer ${SVC_API_KEY}' }, timeout: 600_000 } },
    });
    expect(inv.files[0]!.content).not.toContain('run-key-1');
  });

  it('leaves out what the agent does not set; a bare or foreign model is passed without its provider', () => {
    const inv = claudeDriver.build(spec({ agent: { model: 'claude-sonnet-4-5' } }));
    expect(inv.args).toEqual([
      '-p',
      '--output-format=stream-json',
      '--model=claude-sonnet-4-5',
      '--append-system-prompt-file=/w/run/claude-system-prompt.md',
      '--allowedTools=mcp__svc',
      '--permission-mode=acceptEdits',
      '--mcp-config=/w/run/claude-mcp.json',
      '--strict-mcp-config',
      '--verbose',
    ]);
    expect(inv.files[1]!.content).toBe('You are the svc agent "ana".');
    expect(claudeDriver.build(spec({ agent: { model: 'openrouter/moonshot/kimi-k2' } })).args).toContain('--model=moonshot/kimi-k2');
    expect(claudeDriver.build(spec()).args.some((a) => a.startsWith('--model'))).toBe(false);
  });

  it('maps the permission modes and reasoning off to MAX_THINKING_TOKENS=0', () => {
    const mode = (permissionMode: 'ask' | 'acceptEdits' | 'bypass') => claudeDriver.build(spec({ runtime: { permissionMode } })).args.find((a) => a.startsWith('--permission-mode'));
    expect([mode('ask'), mode('acceptEdits'), mode('bypass')]).toEqual(['--permission-mode=default', '--permission-mode=acceptEdits', '--permission-mode=bypassPermissions']);
    for (const m of ['acceptEdits', 'bypass'] as const) expect(claudeDriver.build(spec({ runtime: { permissionMode: m } })).args.some((a) => a.startsWith('--permission-prompt-tool'))).toBe(false);
    const off = claudeDriver.build(spec({ agent: { reasoning: 'off' } }));
    expect(off.env).toEqual({ SVC_API_KEY: 'run-key-1', MAX_THINKING_TOKENS: '0' });
    expect(off.args.some((a) => a.startsWith('--effort'))).toBe(false);
  });

  it("ask: what Claude Code would ask a person goes to svc's permission_prompt, and the MCP call outlasts runner.permissionTimeoutSec", () => {
    const inv = claudeDriver.build(spec({ runtime: { permissionMode: 'ask', permissionTimeoutSec: 1800 } }));
    const at = inv.args.indexOf('--permission-mode=default');
    expect(inv.args.slice(at, at + 2)).toEqual(['--permission-mode=default', '--permission-prompt-tool=mcp__svc__permission_prompt']);
    // Claude Code refuses MCP tools it is not allowed in -p mode: svc's (the prompt tool among them) are.
    expect(inv.args).toContain('--allowedTools=mcp__svc');
    const timeout = (permissionTimeoutSec: number, permissionMode: 'ask' | 'acceptEdits' = 'ask') =>
      JSON.parse(claudeDriver.build(spec({ runtime: { permissionMode, permissionTimeoutSec } })).files[0]!.content).mcpServers.svc.timeout;
    expect(timeout(1800)).toBe(1_860_000);
    expect(timeout(86_400)).toBe(86_460_000);
    // Never below the 10 minutes any svc call may take; without ask, no call waits on a person.
    expect(timeout(60)).toBe(600_000);
    expect(timeout(1800, 'acceptEdits')).toBe(600_000);
  });

  it('keeps a value that starts with "-" a value (the --flag=value form)', () => {
    const inv = claudeDriver.build(spec({ agent: { allowedPaths: ['-rf'], allowedTools: ['--dangerously-skip-permissions'] } }));
    expect(inv.args).toContain('--add-dir=-rf');
    expect(inv.args).toContain('--allowedTools=--dangerously-skip-permissions');
    expect(inv.args).not.toContain('--dangerously-skip-permissions');
  });
});

describe('claude driver: the stream (recorded from Claude Code 2.1.197)', () => {
  it('reads a run that wrote a file, ran a command and called svc', () => {
    const parser = claudeDriver.parser();
    const lines = fixtureLines('claude-success');
    const items = feed(parser, lines);
    expect(items.map((i) => i.kind)).toEqual(['system', 'thinking', 'text', 'tool_call', 'tool_result', 'file_change', 'tool_call', 'command', 'tool_call', 'tool_result', 'text', 'usage']);
    // The workspace comes from the init line: paths inside it are relative.
    expect(ofKind(items, 'file_change')).toEqual([{ kind: 'file_change', path: 'notes/hello.txt', change: 'add', added: 2, removed: 0 }]);
    expect(ofKind(items, 'tool_call').map((c) => c.tool)).toEqual(['Write', 'Bash', 'mcp__svc__task_comment']);
    expect(ofKind(items, 'command')).toEqual([{ kind: 'command', id: 'toolu_0002', command: 'cat notes/hello.txt && echo shown', exitCode: 0, output: 'hello\nworld\nshown', durationMs: null }]);
    expect(ofKind(items, 'tool_result')[1]).toMatchObject({ id: 'toolu_0003', tool: 'mcp__svc__task_comment', isError: false });
    const state = parser.state();
    expect(state).toMatchObject({ sessionId: JSON.parse(lines[0]!).session_id, succeeded: true, error: null, summary: 'All done.', turns: 4, usageLimit: null });
    expect(state.usage).toEqual({ inputTokens: 80, outputTokens: 24, cacheReadTokens: 7, cacheWriteTokens: 3, costUsd: expect.any(Number) });
    expect(ofKind(items, 'usage')).toEqual([{ kind: 'usage', usage: state.usage }]);
  });

  it('is idle once every tool call of the last message has its result, and not while the model is asked', () => {
    const parser = claudeDriver.parser();
    const lines = fixtureLines('claude-success');
    const idleAfter = lines.map((l) => (parser.line(l), [JSON.parse(l).type, parser.state().idle] as const));
    // Each tool call's result (a user line) leaves Claude Code about to ask the model again: idle;
    // each assistant line is the model's turn: not idle. The final text message is not followed by a call.
    for (const [type, idle] of idleAfter) if (type === 'assistant') expect(idle).toBe(false);
    expect(idleAfter.filter(([type, idle]) => type === 'user' && idle).length).toBe(3);
    expect(idleAfter.at(-2)).toEqual(['assistant', false]);
  });

  it('estimates usage before the result, counting a message once though Claude Code repeats it per block', () => {
    const parser = claudeDriver.parser();
    const lines = fixtureLines('claude-success');
    // Up to the last assistant message: four messages (msg_0004 printed three times).
    feed(parser, lines.slice(0, -1));
    expect(parser.state()).toMatchObject({ turns: 4, succeeded: null, summary: null });
    expect(parser.state().usage).toEqual({ inputTokens: 80, outputTokens: 4, cacheReadTokens: 7, cacheWriteTokens: 3, costUsd: null });
    // The result's totals replace the estimate, they are not added to it.
    feed(parser, lines.slice(-1));
    expect(parser.state().usage.outputTokens).toBe(24);
  });

  it('reads an edit with its line counts, a failing command with its exit code and an API retry', () => {
    const parser = claudeDriver.parser({ cwd: FIXTURE_CWD });
    const items = feed(parser, fixtureLines('claude-edit'));
    expect(ofKind(items, 'system')[1]!.text).toMatch(/^API error 429 \(rate_limit\): retry 1 of 10 in \d+ ms$/);
    expect(ofKind(items, 'file_change')).toEqual([{ kind: 'file_change', path: 'poem.txt', change: 'update', added: 2, removed: 1 }]);
    expect(ofKind(items, 'command')).toEqual([expect.objectContaining({ command: 'exit 3', exitCode: 3, output: 'Exit code 3' })]);
    // Read's result is a plain tool_result: no file changed.
    expect(ofKind(items, 'tool_result').map((r) => r.tool)).toEqual(['Read', 'Edit']);
    expect(parser.state()).toMatchObject({ succeeded: true, summary: 'Edited; the check failed.' });
  });

  it('a failed API call ends as subtype success with is_error true: the run failed, on a usage limit (429)', () => {
    const parser = claudeDriver.parser();
    const items = feed(parser, fixtureLines('claude-429'));
    expect(parser.state()).toMatchObject({
      succeeded: false,
      summary: null,
      error: 'API Error: Request rejected (429) · slow down',
      usageLimit: { resetsAt: null, status: 429 },
    });
    expect(ofKind(items, 'error').map((e) => e.message)).toEqual(['API Error: Request rejected (429) · slow down (rate_limit)', 'API Error: Request rejected (429) · slow down']);
    expect(ofKind(items, 'text')).toEqual([]);
  });

  it("a resumed session keeps its id; its counts are this run's own", () => {
    const parser = claudeDriver.parser();
    feed(parser, fixtureLines('claude-resume'));
    expect(parser.state()).toMatchObject({ sessionId: JSON.parse(fixtureLines('claude-success')[0]!).session_id, succeeded: true, summary: 'Resumed.', turns: 1 });
    expect(parser.state().usage).toMatchObject({ inputTokens: 10, outputTokens: 5 });
  });
});

describe('claude driver: the stream, lines made from its schema', () => {
  // rate_limit_event comes only with a subscription login (agent-clis.md): this line follows the
  // CLI's own schema (rate_limit_info {status, resetsAt in epoch seconds, rateLimitType}).
  const rateLimit = (status: string, resetsAt?: number) => JSON.stringify({ type: 'rate_limit_event', rate_limit_info: { status, resetsAt, rateLimitType: 'five_hour' }, uuid: 'u', session_id: 's' });

  it('a rejected rate limit is a usage limit with its reset; a later 429 result keeps that reset', () => {
    const parser = claudeDriver.parser();
    expect(parser.line(rateLimit('allowed_warning', 1_900_000_000))).toEqual([{ kind: 'rate_limit', status: 'allowed_warning', resetsAt: '2030-03-17T17:46:40.000Z', limitType: 'five_hour' }]);
    expect(parser.state().usageLimit).toBeNull();
    parser.line(rateLimit('rejected', 1_900_000_000));
    expect(parser.state().usageLimit).toEqual({ resetsAt: '2030-03-17T17:46:40.000Z', status: null });
    parser.line(JSON.stringify({ type: 'result', subtype: 'success', is_error: true, api_error_status: 429, result: 'API Error: 429', session_id: 's', num_turns: 1 }));
    expect(parser.state().usageLimit).toEqual({ resetsAt: '2030-03-17T17:46:40.000Z', status: 429 });
    // A status it does not know is not a rate limit item: the line is kept raw.
    expect(parser.line(rateLimit('maybe'))[0]!.kind).toBe('raw');
  });

  it('says why a run ended badly: error_max_turns with its errors', () => {
    const parser = claudeDriver.parser();
    const items = parser.line(
      JSON.stringify({
        type: 'result',
        subtype: 'error_max_turns',
        is_error: true,
        num_turns: 2,
        session_id: 's',
        total_cost_usd: 0.01,
        usage: { input_tokens: 5, output_tokens: 1 },
        errors: ['Reached maximum number of turns (1)'],
      }),
    );
    expect(items).toEqual([
      { kind: 'usage', usage: { inputTokens: 5, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.01 } },
      { kind: 'error', message: 'Reached maximum number of turns (1)' },
    ]);
    expect(parser.state()).toMatchObject({ succeeded: false, error: 'Reached maximum number of turns (1)', turns: 2 });
  });

  it('names the tool calls Claude Code refused (permission_denials)', () => {
    const items = claudeDriver
      .parser()
      .line(JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: 'ok', permission_denials: [{ tool_name: 'Bash' }, { tool_name: 'Bash' }, { tool_name: 'mcp__x__y' }] }));
    expect(items.at(-1)).toEqual({ kind: 'system', text: 'Claude Code refused 3 tool call(s) not allowed: Bash, mcp__x__y' });
  });

  it('keeps unknown and malformed lines raw, ignores blank ones, and never throws', () => {
    const parser = claudeDriver.parser();
    expect(parser.line('')).toEqual([]);
    expect(parser.line('not json at all')).toEqual([{ kind: 'raw', text: 'not json at all' }]);
    expect(parser.line('{"type":"assistant","message":')).toEqual([{ kind: 'raw', text: '{"type":"assistant","message":' }]);
    expect(parser.line('{"type":"prompt_suggestion","suggestion":"x"}')).toEqual([{ kind: 'raw', text: '{"type":"prompt_suggestion","suggestion":"x"}' }]);
    expect(parser.line('[1,2,3]')).toEqual([{ kind: 'raw', text: '[1,2,3]' }]);
    // Shapes the parser knows, with fields of the wrong type.
    for (const line of [
      '{"type":"assistant","message":"text"}',
      '{"type":"assistant","message":{"content":{"type":"text"}}}',
      '{"type":"assistant","message":{"content":[null,1,"s",{"type":"tool_use","name":{"a":1},"input":"x"}]}}',
      '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":42,"content":{"x":1}}]}}',
      '{"type":"result","usage":"many","num_turns":"2","total_cost_usd":"free"}',
      '{"type":"system","subtype":{"x":1}}',
      '{"type":{"x":1}}',
      '{"type":"constructor"}',
      '{"type":"__proto__","__proto__":{"type":"result"}}',
    ]) {
      expect(() => parser.line(line), line).not.toThrow();
    }
    expect(parser.state().usage.inputTokens).toBe(0);
  });

  it('a 10 MB line and a 10,000-deep line are kept raw and cut, quickly', () => {
    const parser = claudeDriver.parser();
    const t = Date.now();
    const huge = parser.line(JSON.stringify({ type: 'assistant', message: { id: 'm', content: [{ type: 'text', text: 'x'.repeat(10 * 1024 * 1024) }] } }));
    const deep = parser.line(`{"type":"assistant","message":${'['.repeat(10_000)}${']'.repeat(10_000)}}`);
    expect(Date.now() - t).toBeLessThan(2000);
    expect(huge).toHaveLength(1);
    expect(huge[0]!.kind).toBe('raw');
    expect(deep[0]!.kind).toBe('raw');
    for (const item of [...huge, ...deep]) expect(Buffer.byteLength((item as { text: string }).text)).toBeLessThan(ITEM_TEXT_MAX + 100);
  });

  it('cuts a long text and a large tool input to the item bound', () => {
    const parser = claudeDriver.parser();
    const items = parser.line(
      JSON.stringify({
        type: 'assistant',
        message: {
          id: 'm1',
          content: [
            { type: 'text', text: 'y'.repeat(100_000) },
            { type: 'tool_use', id: 't1', name: 'Write', input: { file_path: 'big.txt', content: 'z'.repeat(100_000) } },
          ],
        },
      }),
    );
    expect((items[0] as { text: string }).text).toMatch(/^y{16384}… \[83616 more bytes cut\]$/);
    expect(typeof (items[1] as { input: unknown }).input).toBe('string');
    // The call is still known when its result comes: the file change is reported.
    const result = parser.line(
      JSON.stringify({ type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] }, tool_use_result: { type: 'create', filePath: 'big.txt', content: 'a\nb\n' } }),
    );
    expect(result.at(-1)).toEqual({ kind: 'file_change', path: 'big.txt', change: 'add', added: 2, removed: 0 });
  });
});
