import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../src/kernel/errors.js';
import { functionTools } from '../src/tools/functions.js';
import { TOOLS } from '../src/tools/index.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

// The registry's second door: function tools run in-process (the chat orchestrator's tool set).
let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
});
afterAll(async () => {
  await d.close();
});

describe('functionTools', () => {
  it('offers every tool with its JSON Schema, runs it with its events, and throws our AppError on refusal', async () => {
    const tools = functionTools(d.daemon.app, null, { checkOutputs: true });
    // Never a tool for runs' CLIs: a model has no permission prompt to answer.
    expect(tools.map((t) => t.name)).toEqual(TOOLS.filter((t) => t.audience !== 'run').map((t) => t.name));
    expect(functionTools(d.daemon.app, { name: 'cody', keyId: 'x', source: 'run', runId: 'r1' }).map((t) => t.name)).not.toContain('permission_prompt');
    expect(tools.every((t) => t.parameters.type === 'object')).toBe(true);
    const create = tools.find((t) => t.name === 'task_create')!;
    const mark = await d.daemon.app.events.lastId();
    const out = (await create.call({ title: 'from the orchestrator' })) as { task: { id: string } };
    expect((await d.daemon.app.events.since(mark, 10)).map((e) => [e.name, e.data.taskId])).toEqual([['task:created', out.task.id]]);
    const move = tools.find((t) => t.name === 'task_transition')!;
    const refused = await move.call({ taskId: out.task.id, to: 'done' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'invalid_transition', status: 409 });
  });

  it('a read-only principal gets only the read-only tools', () => {
    const names = functionTools(d.daemon.app, { name: 'viewer', keyId: 'x', tools: 'read', source: 'project.json' }).map((t) => t.name);
    expect(names).toEqual(TOOLS.filter((t) => t.annotations.readOnlyHint).map((t) => t.name));
  });
});
