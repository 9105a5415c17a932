import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DispatchGate } from '../../src/resources/runs/dispatch-gate.js';

// The runner's dispatch-first rule (dispatch-gate.ts): git work that can wait (a finished run's
// commit, spare worktrees, cleanup) waits while runs are dispatched, at most maxDefer, and runs
// `parallel` at a time, in order. Timers are vitest's fake ones: the defer is a real-time wait.

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

/** Which of the turns asked for have started, by name. */
function turns(gate: DispatchGate) {
  const started: string[] = [];
  const ends = new Map<string, () => void>();
  const ask = (name: string) =>
    void gate.turn().then((end) => {
      started.push(name);
      ends.set(name, end);
    });
  const end = (name: string) => ends.get(name)!();
  return { started, ask, end };
}

describe('dispatch gate', () => {
  it('a turn starts at once when no dispatch is under way, and waits while one is', async () => {
    const gate = new DispatchGate(250, 2);
    const t = turns(gate);
    t.ask('commit 1');
    await vi.advanceTimersByTimeAsync(0);
    expect(t.started).toEqual(['commit 1']);
    const release = gate.hold();
    expect(gate.busy).toBe(true);
    t.ask('commit 2');
    await vi.advanceTimersByTimeAsync(100);
    expect(t.started).toEqual(['commit 1']);
    release();
    release(); // a second call does nothing
    await vi.advanceTimersByTimeAsync(0);
    expect(t.started).toEqual(['commit 1', 'commit 2']);
    expect(gate.busy).toBe(false);
  });

  it('never waits longer than maxDefer, however many dispatches follow one another', async () => {
    const gate = new DispatchGate(250, 2);
    const t = turns(gate);
    let release = gate.hold();
    t.ask('commit');
    // Dispatches back to back, each overlapping the next: the gate is never open.
    for (let i = 0; i < 5; i++) {
      await vi.advanceTimersByTimeAsync(60);
      if (i === 3) expect(t.started).toEqual([]); // 240 ms
      const next = gate.hold();
      release();
      release = next;
    }
    expect(t.started).toEqual(['commit']); // at 250 ms
    release();
  });

  it('at most `parallel` turns at once, started in the order asked', async () => {
    const gate = new DispatchGate(250, 2);
    const t = turns(gate);
    for (const n of ['a', 'b', 'c', 'd']) t.ask(n);
    await vi.advanceTimersByTimeAsync(0);
    expect(t.started).toEqual(['a', 'b']);
    t.end('b');
    await vi.advanceTimersByTimeAsync(0);
    expect(t.started).toEqual(['a', 'b', 'c']);
    // Held by a dispatch, a turn freed does not start the next one...
    const release = gate.hold();
    t.end('a');
    await vi.advanceTimersByTimeAsync(0);
    expect(t.started).toEqual(['a', 'b', 'c']);
    // ...until the dispatch is over.
    release();
    await vi.advanceTimersByTimeAsync(0);
    expect(t.started).toEqual(['a', 'b', 'c', 'd']);
  });

  it('quiet() resolves once no dispatch is under way, taking no turn', async () => {
    const gate = new DispatchGate(250, 1);
    const t = turns(gate);
    t.ask('commit');
    await vi.advanceTimersByTimeAsync(0);
    let quiet = false;
    void gate.quiet().then(() => (quiet = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(quiet).toBe(true); // the one turn is taken: quiet does not wait for it
    quiet = false;
    const release = gate.hold();
    void gate.quiet().then(() => (quiet = true));
    await vi.advanceTimersByTimeAsync(100);
    expect(quiet).toBe(false);
    release();
    await vi.advanceTimersByTimeAsync(0);
    expect(quiet).toBe(true);
  });
});
