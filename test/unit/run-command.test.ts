import { describe, expect, it } from 'vitest';
import { commandDriver } from '../../src/resources/runs/drivers/command.js';
import { feed, spec } from './run-fixtures.js';

const line = (o: unknown) => JSON.stringify(o);

describe('command driver: the invocation', () => {
  it('runs runtime.command with runtime.args, the prompt on stdin; resume and MCP through the environment', () => {
    const inv = commandDriver.build(spec({ runtime: { kind: 'command', command: '/opt/agent/run', args: ['--fast'] }, resumeSessionId: 'sess-9' }));
    expect(inv).toEqual({ command: '/opt/agent/run', args: ['--fast'], env: { SVC_MCP_URL: 'http://127.0.0.1:7420/mcp', SVC_RESUME_SESSION: 'sess-9' }, stdin: 'Do the task.', files: [] });
    expect(commandDriver.build(spec({ runtime: { kind: 'command' } })).env).toEqual({ SVC_MCP_URL: 'http://127.0.0.1:7420/mcp' });
    expect([commandDriver.defaultCommand, commandDriver.versionArgs]).toEqual([null, []]);
  });
});

describe('command driver: the stream', () => {
  it('turns each documented shape into its item', () => {
    const items = feed(commandDriver.parser(), [
      line({ type: 'text', text: 'hello' }),
      line({ type: 'thinking', text: 'hmm' }),
      line({ type: 'tool_call', tool: 'grep', id: 'c1', input: { q: 'x' } }),
      line({ type: 'tool_call', tool: 'ls' }),
      line({ type: 'tool_result', output: 'found', id: 'c1', tool: 'grep', isError: false }),
      line({ type: 'tool_result', output: 'boom', isError: true }),
      line({ type: 'command', command: 'npm test', exitCode: 1, output: 'failed', durationMs: 1200, id: 'k' }),
      line({ type: 'command', command: 'sleep 9' }),
      line({ type: 'file_change', path: 'src/a.ts', change: 'update', added: 3, removed: 1 }),
      line({ type: 'file_change', path: 'b.ts', change: 'delete' }),
      line({ type: 'error', message: 'oops' }),
      line({ type: 'system', text: 'model m1' }),
      line({ type: 'rate_limit', status: 'allowed_warning', resetsAt: '2030-01-01T05:00:00+01:00', limitType: 'daily' }),
    ]);
    expect(items).toEqual([
      { kind: 'text', text: 'hello' },
      { kind: 'thinking', text: 'hmm' },
      { kind: 'tool_call', id: 'c1', tool: 'grep', input: { q: 'x' } },
      { kind: 'tool_call', id: null, tool: 'ls', input: null },
      { kind: 'tool_result', id: 'c1', tool: 'grep', output: 'found', isError: false },
      { kind: 'tool_result', id: null, tool: null, output: 'boom', isError: true },
      { kind: 'command', id: 'k', command: 'npm test', exitCode: 1, output: 'failed', durationMs: 1200 },
      { kind: 'command', id: null, command: 'sleep 9', exitCode: null, output: null, durationMs: null },
      { kind: 'file_change', path: 'src/a.ts', change: 'update', added: 3, removed: 1 },
      { kind: 'file_change', path: 'b.ts', change: 'delete', added: null, removed: null },
      { kind: 'error', message: 'oops' },
      { kind: 'system', text: 'model m1' },
      { kind: 'rate_limit', status: 'allowed_warning', resetsAt: '2030-01-01T04:00:00.000Z', limitType: 'daily' },
    ]);
  });

  it('usage lines are running totals; a result sets the outcome', () => {
    const parser = commandDriver.parser();
    parser.line(line({ type: 'usage', usage: { inputTokens: 10, outputTokens: 2 } }));
    parser.line(line({ type: 'usage', usage: { inputTokens: 25, outputTokens: 6, cacheReadTokens: 4, costUsd: 0.5 } }));
    expect(parser.state().usage).toEqual({ inputTokens: 25, outputTokens: 6, cacheReadTokens: 4, cacheWriteTokens: 0, costUsd: 0.5 });
    // A usage line ends a turn: idle until the next line.
    expect(parser.state().idle).toBe(true);
    expect(parser.line(line({ type: 'result', summary: 'Done.', sessionId: 's-1', turns: 3, usage: { inputTokens: 30, outputTokens: 7 } }))).toEqual([
      { kind: 'usage', usage: { inputTokens: 30, outputTokens: 7, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null } },
    ]);
    expect(parser.state()).toEqual({
      sessionId: 's-1',
      usage: { inputTokens: 30, outputTokens: 7, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
      turns: 3,
      summary: 'Done.',
      succeeded: true,
      error: null,
      usageLimit: null,
      idle: false,
    });
  });

  it('a result with an error fails the run; a rejected rate limit is a usage limit', () => {
    const parser = commandDriver.parser();
    expect(parser.line(line({ type: 'rate_limit', status: 'rejected', resetsAt: 1_900_000_000 }))).toEqual([
      { kind: 'rate_limit', status: 'rejected', resetsAt: '2030-03-17T17:46:40.000Z', limitType: null },
    ]);
    expect(parser.line(line({ type: 'result', error: 'out of credits' }))).toEqual([{ kind: 'error', message: 'out of credits' }]);
    expect(parser.state()).toMatchObject({ succeeded: false, error: 'out of credits', summary: null, usageLimit: { resetsAt: '2030-03-17T17:46:40.000Z', status: null } });
  });

  it('keeps plain text, unknown types and wrongly typed fields as raw lines', () => {
    const parser = commandDriver.parser();
    const lines = [
      'Compiling…',
      '{"type":"text"}',
      '{"type":"text","text":5}',
      '{"type":"command","command":"x","exitCode":"1"}',
      '{"type":"command","command":"x","exitCode":1.5}',
      '{"type":"file_change","path":"a","change":"rename"}',
      '{"type":"file_change","path":"a","change":"add","added":"2"}',
      '{"type":"rate_limit","status":"slow"}',
      '{"type":"usage","usage":[1]}',
      '{"type":"constructor"}',
      '{"type":"progress","pct":50}',
      '[{"type":"text","text":"in an array"}]',
      `{"type":"text","text":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
    ];
    const items = feed(parser, lines);
    expect(items.map((i) => i.kind)).toEqual(lines.map(() => 'raw'));
    expect(items[0]).toEqual({ kind: 'raw', text: 'Compiling…' });
    expect(parser.line('   ')).toEqual([]);
    expect(parser.state()).toMatchObject({ succeeded: null, usage: { inputTokens: 0 } });
  });
});
