import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { exited, serve, svc, SVC } from './cli-helpers.js';
import { makeProject } from './harness.js';

const kill: { kill(sig?: NodeJS.Signals): void }[] = [];
afterEach(() => kill.splice(0).forEach((c) => c.kill('SIGKILL')));

function tail(cwd: string, args: string[]) {
  const child = spawn(process.execPath, [SVC, 'events', 'tail', ...args], { cwd, env: { ...process.env, NO_COLOR: '1', SERVICE_API_KEY: '' } });
  kill.push(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  return {
    child,
    lines: () => out.split('\n').filter(Boolean),
    stderr: () => err,
    async until(pred: (lines: string[]) => boolean, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (!pred(this.lines())) {
        if (Date.now() > deadline) throw new Error(`tail never printed what was expected:\n${out}\n${err}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
}

/**
 * Waits until the tail is connected: an event made before that is not in its stream. The CLI runs
 * in-process now and acts at once, so a fixed pause would race with the tail's start; instead,
 * teams named warm-N are added until the tail prints one.
 */
async function connected(t: ReturnType<typeof tail>, root: string): Promise<void> {
  for (let i = 0; ; i++) {
    expect((await svc(['teams', 'add', `warm-${i}`], { cwd: root })).code).toBe(0);
    try {
      await t.until((l) => l.length > 0, 500);
      return;
    } catch (err) {
      if (i > 40) throw err;
    }
  }
}

const names = (lines: string[]) => lines.map((l) => JSON.parse(l).data.name).filter((n: string) => !n.startsWith('warm-'));

describe('svc events tail', () => {
  it('prints one JSON object per event, reconnects with Last-Event-ID across a daemon restart, and exits 0 on Ctrl-C', async () => {
    const root = makeProject();
    const first = await serve(root);
    kill.push(first.child);
    const t = tail(root, ['--json', '--filter', 'team:']);
    await connected(t, root);
    expect((await svc(['teams', 'add', 'one'], { cwd: root })).code).toBe(0);
    await t.until((l) => names(l).length === 1);
    expect(JSON.parse(t.lines().at(-1)!)).toMatchObject({ event: 'team:created', data: { name: 'one' }, id: expect.any(Number) });

    first.child.kill('SIGTERM');
    await exited(first.child);
    const second = await serve(root);
    kill.push(second.child);
    // Created right away: the tail may still be reconnecting and must catch it up by Last-Event-ID.
    expect((await svc(['teams', 'add', 'two'], { cwd: root })).code).toBe(0);
    expect((await svc(['agents', 'add', 'filtered-out'], { cwd: root })).code).toBe(0);
    expect((await svc(['teams', 'add', 'three'], { cwd: root })).code).toBe(0);
    await t.until((l) => names(l).length === 3);
    expect(names(t.lines())).toEqual(['one', 'two', 'three']);
    const ids = t.lines().map((l) => JSON.parse(l).id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);

    t.child.kill('SIGINT');
    expect(await exited(t.child)).toBe(0);
  });

  it('prints a readable line per event by default', async () => {
    const root = makeProject();
    const d = await serve(root);
    kill.push(d.child);
    const t = tail(root, []);
    await connected(t, root);
    await svc(['teams', 'add', 'readable'], { cwd: root });
    await t.until((l) => l.some((x) => x.includes('name=readable')));
    expect(t.lines().find((x) => x.includes('name=readable'))).toMatch(/^\d\d:\d\d:\d\d {2}team:created\s+name=readable$/);
    t.child.kill('SIGINT');
    expect(await exited(t.child)).toBe(0);
  });

  it('exits 1 on a bad filter', async () => {
    const root = makeProject();
    const d = await serve(root);
    kill.push(d.child);
    const r = await svc(['events', 'tail', '--filter', 'nope:'], { cwd: root });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('invalid_request');
  });
});
