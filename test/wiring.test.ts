import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SKILL_INDEX } from '../src/resources/skills/live-index.js';
import { TASK_HOOKS, type TaskTransition } from '../src/resources/tasks/hooks.js';
import { VAULT } from '../src/resources/vault/live.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

const skillMd = (name: string) => `---\nname: ${name}\ndescription: the ${name} skill\n---\n\nDo it.\n`;

describe('two daemons in one process', () => {
  let a: TestDaemon;
  let b: TestDaemon;
  beforeAll(async () => {
    a = await startTestDaemon({ files: { 'skills/only-in-a/SKILL.md': skillMd('only-in-a') } });
    b = await startTestDaemon({ files: { 'skills/only-in-b/SKILL.md': skillMd('only-in-b') } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  const task = async (d: TestDaemon, body: Record<string, unknown> = {}) => (await d.api('POST', '/api/v1/tasks', { body: { title: 'work', ...body } })).body.data;

  it('each owns its task hooks: a listener of one never hears the other', async () => {
    const hooksA = a.daemon.app.services.get(TASK_HOOKS);
    const hooksB = b.daemon.app.services.get(TASK_HOOKS);
    expect(hooksA).not.toBe(hooksB);
    const heardA: TaskTransition[] = [];
    const heardB: TaskTransition[] = [];
    const offA = hooksA.onTransition((_app, c) => void heardA.push(c));
    const offB = hooksB.onTransition((_app, c) => void heardB.push(c));
    try {
      const inB = await task(b);
      expect((await b.api('POST', `/api/v1/tasks/${inB.id}/transition`, { body: { to: 'assigned' } })).status).toBe(200);
      expect(heardA).toEqual([]);
      expect(heardB.map((c) => [c.task.id, c.from, c.to])).toEqual([[inB.id, 'pending', 'assigned']]);
    } finally {
      offA();
      offB();
    }
  });

  it("a guard of one vetoes only that daemon's moves", async () => {
    const off = a.daemon.app.services.get(TASK_HOOKS).beforeTransition(() => {
      throw new Error('daemon a refuses every move');
    });
    try {
      const inA = await task(a);
      const inB = await task(b);
      expect((await a.api('POST', `/api/v1/tasks/${inA.id}/transition`, { body: { to: 'assigned' } })).status).toBe(500);
      expect((await b.api('POST', `/api/v1/tasks/${inB.id}/transition`, { body: { to: 'assigned' } })).status).toBe(200);
    } finally {
      off();
    }
  });

  it('both are wired the same way by daemon.ts, once each: missions and the approval gate', async () => {
    for (const d of [a, b]) {
      const h = d.daemon.app.services.get(TASK_HOOKS);
      // missions: a transition listener, a guard, a removal listener, a creation hook; approvals: a guard.
      expect([h.transitionListeners.size, h.transitionGuards.size, h.removalListeners.size, h.createHooks.size]).toEqual([1, 2, 1, 1]);
    }
    // The wiring works in both: a draft mission holds its task in either daemon.
    for (const d of [a, b]) {
      const m = (await d.api('POST', '/api/v1/missions', { body: { name: 'held', tasks: [{ title: 'wait' }] } })).body.data;
      const res = await d.api('POST', `/api/v1/tasks/${m.taskIds[0]}/transition`, { body: { to: 'pending' } });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatch(/still draft/);
    }
  });

  it('each has its own skill index: a skill of one is not listed by the other', async () => {
    expect(a.daemon.app.services.get(SKILL_INDEX)).not.toBe(b.daemon.app.services.get(SKILL_INDEX));
    const names = async (d: TestDaemon) => ((await d.api('GET', '/api/v1/skills')).body.data as { name: string }[]).map((s) => s.name);
    expect(await names(a)).toEqual(['only-in-a']);
    expect(await names(b)).toEqual(['only-in-b']);
    expect((await a.api('POST', '/api/v1/skills', { body: { name: 'made-in-a', description: 'd', content: 'x' } })).status).toBe(201);
    expect(await names(a)).toEqual(['made-in-a', 'only-in-a']);
    expect(await names(b)).toEqual(['only-in-b']);
  });

  it('each has its own vault: an entry sealed in one is neither listed nor opened by the other', async () => {
    const vaultA = a.daemon.app.services.get(VAULT);
    const vaultB = b.daemon.app.services.get(VAULT);
    expect(vaultA).not.toBe(vaultB);
    expect(vaultA.projectId).toBe(a.daemon.app.projectId);
    expect(vaultB.projectId).toBe(b.daemon.app.projectId);
    for (const d of [a, b]) expect((await d.api('POST', '/api/v1/agents', { body: { name: 'dev' } })).status).toBe(201);
    const saved = await a.api('POST', '/api/v1/vault/entries', { body: { agent: 'dev', service: 'gh', type: 'api_key', credentials: { token: 't' } } });
    expect(saved.status).toBe(200);
    expect((await a.api('GET', '/api/v1/vault/entries')).body.data).toHaveLength(1);
    expect((await b.api('GET', '/api/v1/vault/entries')).body.data).toEqual([]);
  });

  it('closing one leaves the other serving', async () => {
    const c = await startTestDaemon();
    await c.close();
    expect((await a.api('GET', '/api/v1/tasks')).status).toBe(200);
    const t = await task(a);
    expect((await a.api('POST', `/api/v1/tasks/${t.id}/transition`, { body: { to: 'assigned' } })).status).toBe(200);
  });
});
