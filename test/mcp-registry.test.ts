import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mcpMarkdown } from '../src/tools/docs.js';
import { defineTool } from '../src/tools/define.js';
import { runTool, TOOLS, toolJsonSchema } from '../src/tools/index.js';

describe('the agent tool registry', () => {
  it('names each tool once, in snake_case under 60 characters', () => {
    const names = TOOLS.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/), expect(n.length).toBeLessThan(60);
    for (const required of [
      'task_list',
      'task_get',
      'task_create',
      'task_next',
      'task_claim',
      'task_heartbeat',
      'task_transition',
      'task_comment',
      'mission_list',
      'mission_status',
      'approval_request',
      'approval_status',
      'agent_list',
      'skill_get',
    ]) {
      expect(names).toContain(required);
    }
  });

  it.each(TOOLS.map((t) => [t.name, t] as const))('%s: a description for a model, object schemas, coherent annotations', (_n, t) => {
    expect(t.description.length).toBeGreaterThan(40);
    expect(toolJsonSchema(t.input, 'input').type).toBe('object');
    expect(toolJsonSchema(t.output, 'output').type).toBe('object');
    expect(t.input).toBeInstanceOf(z.ZodObject);
    // A tool that only reads can destroy nothing and is safe to repeat.
    if (t.annotations.readOnlyHint) expect(t.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
    // Unknown input properties are refused, as on the REST API; a CLI's own call (permission_prompt)
    // may carry fields a later version adds: they are dropped, never a refusal (which denies the tool).
    if (t.audience !== 'run') expect(t.input.safeParse({ surelyNotAField: 1 }).success).toBe(false);
    else expect(t.input.parse({ tool_name: 'Bash', input: {}, surelyNotAField: 1 })).not.toHaveProperty('surelyNotAField');
  });
});

describe('runTool output check (on in tests)', () => {
  const leaky = defineTool({
    name: 'leaky',
    title: 'Leaky',
    description: 'A tool whose handler returns a field its output schema does not declare.',
    input: z.strictObject({}),
    output: z.object({ ok: z.boolean() }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    handler: () => ({ ok: true, secret: 'x' }) as { ok: boolean },
    summary: () => 'ok',
  });
  const ctx = { app: {} as never, principal: null };
  it('refuses an output carrying undeclared fields', () => {
    expect(() => runTool(leaky, { ...ctx, checkOutput: true }, {})).toThrow(/does not declare/);
  });
  it('is skipped in production', () => {
    expect(runTool(leaky, ctx, {})).toMatchObject({ ok: true });
  });
});

describe('docs/mcp.md', () => {
  it('is the committed copy of what the registry generates (run `npm run docs` after changing a tool)', () => {
    expect(readFileSync(new URL('../docs/mcp.md', import.meta.url), 'utf8')).toBe(mcpMarkdown());
  });

  it('documents every tool with its input and output fields', () => {
    const md = mcpMarkdown();
    for (const t of TOOLS) {
      expect(md).toContain(`### ${t.name}\n`);
      for (const field of Object.keys((toolJsonSchema(t.input, 'input').properties as object) ?? {})) expect(md).toContain(`| \`${field}\` |`);
    }
  });
});
