import { PassThrough } from 'node:stream';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { askKey, keptInput, PERMISSION_INPUT_MAX, permissionAnswer, permissionTitle } from '../../src/resources/approvals/permissions.js';
import type { Approval } from '../../src/resources/approvals/schema.js';
import { mayUse } from '../../src/tools/define.js';
import { findTool } from '../../src/tools/index.js';
import { streamAnswer } from '../../src/tools/mcp.js';
import type { Principal } from '../../src/kernel/auth.js';
import { FakeClock } from '../fake-clock.js';

// The pure parts of permission requests: what the approver reads, what is kept, what the CLI is
// answered, who may call the tool, and the waiting answer's SSE stream on a fake clock.

describe('what a permission request shows', () => {
  it('a title that says who wants what: Bash runs, other tools are used, with the field that says what', () => {
    expect(permissionTitle('cody', 'Bash', { command: 'npm test', description: 'tests' })).toBe('cody wants to run Bash: npm test');
    expect(permissionTitle('cody', 'Edit', { file_path: 'src/cli.ts', old_string: 'a', new_string: 'b' })).toBe('cody wants to use Edit: src/cli.ts');
    expect(permissionTitle('cody', 'WebFetch', { url: 'https://example.com', prompt: 'read' })).toBe('cody wants to use WebFetch: https://example.com');
    expect(permissionTitle('cody', 'mcp__gh__create_issue', { title: 'x' })).toBe('cody wants to use mcp__gh__create_issue');
    // A command on many lines, or a long one, stays one line of bounded length.
    const long = permissionTitle('cody', 'Bash', { command: `echo a\n  && ${'x'.repeat(1000)}` });
    expect(long).toMatch(/^cody wants to run Bash: echo a && x+…$/);
    expect(long.length).toBeLessThan(400);
    // Inherited fields are not read: only the input's own.
    expect(permissionTitle('cody', 'Bash', Object.create({ command: 'inherited' }))).toBe('cody wants to run Bash');
  });

  it('keeps the input with every secret redacted, run keys included, and a large one cut to its JSON text', () => {
    const runKey = `svc_run_${'A'.repeat(43)}`;
    expect(keptInput({ command: 'curl -H "Authorization: token sekret-value" x', env: { KEY: runKey } }, ['sekret-value'])).toEqual({
      command: 'curl -H "Authorization: token [REDACTED]" x',
      env: { KEY: '[REDACTED]' },
    });
    const big = keptInput({ content: 'y'.repeat(PERMISSION_INPUT_MAX * 2) }, []);
    expect(typeof big).toBe('string');
    expect(big as string).toMatch(/^\{"content":"y+… \[\d+ more characters cut\]$/);
    expect((big as string).length).toBeLessThan(PERMISSION_INPUT_MAX + 100);
  });

  it('finds an ask again by agent, tool and input, whatever the order of its keys', () => {
    expect(askKey('cody', 'Bash', { command: 'ls', description: 'd' })).toBe(askKey('cody', 'Bash', { description: 'd', command: 'ls' }));
    expect(askKey('cody', 'Bash', { command: 'ls' })).not.toBe(askKey('rex', 'Bash', { command: 'ls' }));
    expect(askKey('cody', 'Bash', { command: 'ls' })).not.toBe(askKey('cody', 'Bash', { command: 'ls -a' }));
  });
});

describe('what the CLI is answered', () => {
  const decided = (over: Partial<Approval>): Approval => ({ tool: 'Bash', status: 'approved', timedOut: false, resolvedBy: 'lead', feedback: null, ...over }) as Approval;

  it('allow carries the input as the CLI sent it; deny says who refused and why, or that nobody decided', () => {
    const input = { command: 'npm test', token: 'secret' };
    expect(permissionAnswer(decided({}), input)).toEqual({ behavior: 'allow', updatedInput: input });
    expect(permissionAnswer(decided({ status: 'rejected', feedback: 'not now' }), input)).toEqual({ behavior: 'deny', message: 'lead refused: not now' });
    expect(permissionAnswer(decided({ status: 'rejected', timedOut: true, resolvedBy: 'timeout' }), input)).toEqual({
      behavior: 'deny',
      message: expect.stringMatching(/^Nobody decided whether you may use Bash in time/),
    });
  });
});

describe('who may call permission_prompt', () => {
  const tool = findTool('permission_prompt')!;
  const principal = (p: Partial<Principal>): Principal => ({ name: 'x', keyId: 'k', source: 'project.json', ...p });

  it('a run key only (the CLI svc started), never another key nor the daemon itself', () => {
    expect(mayUse(principal({ source: 'run', runId: 'r1' }), tool)).toBe(true);
    expect(mayUse(principal({}), tool)).toBe(false);
    expect(mayUse(null, tool)).toBe(false);
    // Another tool is unchanged for the same keys.
    expect(mayUse(principal({}), findTool('task_comment')!)).toBe(true);
  });
});

describe('the answer of a call that waits (SSE)', () => {
  function response(): { res: ServerResponse; text: () => string; head: () => Record<string, unknown> | null } {
    const sink = new PassThrough();
    let written = '';
    let head: Record<string, unknown> | null = null;
    sink.on('data', (c) => (written += String(c)));
    const res = Object.assign(sink, {
      writeHead(_status: number, headers: Record<string, unknown>) {
        head = headers;
        return res;
      },
    }) as unknown as ServerResponse;
    return { res, text: () => written, head: () => head };
  }
  const frames = (text: string) =>
    text
      .split('\n\n')
      .filter((f) => f.startsWith('event: message'))
      .map((f) => JSON.parse(f.slice(f.indexOf('data: ') + 6)));

  it('opens at once, says it is waiting every interval (progress with the token), and ends with the answer', async () => {
    const clock = new FakeClock();
    const r = response();
    let answer!: (m: unknown) => void;
    const done = streamAnswer(r.res, new Promise((resolve) => (answer = resolve)) as never, 'tok', clock, 1000);
    expect(r.head()).toMatchObject({ 'Content-Type': 'text/event-stream; charset=utf-8' });
    clock.advance(3500);
    answer({ jsonrpc: '2.0', id: 4, result: { content: [] } });
    await done;
    await new Promise((resolve) => setImmediate(resolve));
    const sent = frames(r.text());
    expect(sent.map((m) => m.params?.progress ?? m.id)).toEqual([1, 2, 3, 4]);
    expect(sent[0]).toEqual({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok', progress: 1, message: 'waiting' } });
    expect(clock.pending).toBe(0);
  });

  it('without a progress token, comments keep the stream alive', async () => {
    const clock = new FakeClock();
    const r = response();
    const done = streamAnswer(r.res, Promise.resolve({ jsonrpc: '2.0', id: 1, result: {} }) as never, undefined, clock, 1000);
    clock.advance(1000);
    await done;
    await new Promise((resolve) => setImmediate(resolve));
    expect(r.text()).toContain(': waiting\n\n');
    expect(frames(r.text())).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
  });
});
