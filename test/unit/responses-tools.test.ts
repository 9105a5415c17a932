import { describe, expect, it } from 'vitest';
import type { ResponsesTool } from '../../src/resources/chat/responses-schema.js';
import { customInput, ToolMap, toolMapOf } from '../../src/resources/chat/responses-tools.js';

// A Responses request's tools as chat functions, and the model's calls back: pure.

const fn = (name: string) => ({ type: 'function', name }) as ResponsesTool;
const ns = (name: string, tools: ResponsesTool[]) => ({ type: 'namespace', name, tools }) as unknown as ResponsesTool;
const VALID = /^[a-zA-Z0-9_-]{1,64}$/;

describe('ToolMap', () => {
  it('gives every tool a valid, distinct name and maps each back to exactly what it stands for', () => {
    const long = 'n'.repeat(200);
    const tools = [ns('mcp__a', [fn('run'), fn(long), fn('x y')]), ns('mcp__b', [fn(long)]), fn('mcp__a__x_y'), fn('ok')];
    const map = new ToolMap(tools);
    const names = map.functions.map((f) => f.function.name);
    expect(names).toHaveLength(6);
    expect(new Set(names).size).toBe(6);
    for (const n of names) expect(n).toMatch(VALID);
    expect(names[0]).toBe('mcp__a__run');
    expect(names[4]).toBe('mcp__a__x_y'); // the client's own valid name is kept; the cleaned-up `x y` yields
    expect(names.map((n) => map.targetOf(n))).toEqual([
      { kind: 'function', name: 'run', namespace: 'mcp__a' },
      { kind: 'function', name: long, namespace: 'mcp__a' },
      { kind: 'function', name: 'x y', namespace: 'mcp__a' },
      { kind: 'function', name: long, namespace: 'mcp__b' },
      { kind: 'function', name: 'mcp__a__x_y' },
      { kind: 'function', name: 'ok' },
    ]);
    // Names are stable: the same tools give the same names (a conversation's old calls keep theirs).
    expect(new ToolMap(tools).functions.map((f) => f.function.name)).toEqual(names);
    // A name svc never gave (a model's invention) is passed back as a plain function of that name.
    expect(map.targetOf('__proto__')).toEqual({ kind: 'function', name: '__proto__' });
  });

  it('offers a tool listed twice once, and keeps hosted tools and a server-run tool_search aside', () => {
    const map = new ToolMap([
      fn('a'),
      fn('a'),
      { type: 'web_search' } as ResponsesTool,
      { type: 'tool_search', execution: 'server' } as ResponsesTool,
      { type: 'file_search' } as ResponsesTool,
      { type: 'web_search' } as ResponsesTool,
    ]);
    expect(map.functions.map((f) => f.function.name)).toEqual(['a']);
    expect(map.hostedTypes()).toEqual(['web_search', 'tool_search', 'file_search']);
  });

  it('turns calls back into function_call, custom_tool_call and tool_search_call items', () => {
    const map = new ToolMap([ns('mcp__s', [fn('t')]), { type: 'custom', name: 'apply_patch' } as ResponsesTool, { type: 'tool_search', execution: 'client' } as ResponsesTool]);
    expect(map.callItem('mcp__s__t', 'c1', '{"a":1}')).toEqual({ type: 'function_call', call_id: 'c1', name: 't', namespace: 'mcp__s', arguments: '{"a":1}' });
    expect(map.callItem('apply_patch', 'c2', '{"input":"*** Begin Patch"}')).toEqual({ type: 'custom_tool_call', call_id: 'c2', name: 'apply_patch', input: '*** Begin Patch' });
    expect(map.callItem('tool_search', 'c3', '{"query":"x"}')).toEqual({ type: 'tool_search_call', call_id: 'c3', execution: 'client', arguments: { query: 'x' } });
    expect(map.callItem('tool_search', 'c4', 'not json')).toMatchObject({ arguments: {} });
    expect(map.toolChoice({ type: 'function', name: 't', namespace: 'mcp__s' })).toEqual({ type: 'function', function: { name: 'mcp__s__t' } });
    expect(map.toolChoice({ type: 'custom', name: 'apply_patch' })).toEqual({ type: 'function', function: { name: 'apply_patch' } });
    expect(map.toolChoice({ type: 'web_search' })).toBeUndefined();
    expect(map.toolChoice('required')).toBe('required');
  });

  it.each([
    ['{"input":"a\\nb"}', 'a\nb'],
    ['"a string"', 'a string'],
    ['*** Begin Patch\n*** End Patch', '*** Begin Patch\n*** End Patch'], // a model that wrote the input bare
    ['{"other":1}', '{"other":1}'],
  ])("reads a custom tool's input from %j", (args, input) => expect(customInput(args)).toBe(input));

  it('adds the tools a tool_search_output loaded, after those the request lists', () => {
    const map = toolMapOf({ tools: [fn('a')], input: [{ type: 'tool_search_output', call_id: 'c', tools: [ns('mcp__x', [fn('b')]), fn('a')] }] as never });
    expect(map.functions.map((f) => f.function.name)).toEqual(['a', 'mcp__x__b']);
    expect(map.namesFor([ns('mcp__x', [fn('b')])])).toEqual(['mcp__x__b']);
  });
});
