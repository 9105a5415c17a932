import { afterEach, describe, expect, it } from 'vitest';
import { startPruner, type Pruner, type PruneStep } from '../../src/db/prune.js';

// The pruner's steps are counters here: what matters is the batching, the turns of the event loop
// between batches, and that a failing step or a close never leaves a pass half-done forever.

let p: Pruner | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

/** A step with `rows` to drop, recording each batch and whether the event loop turned before it. */
function rowsStep(name: string, rows: number, log: string[]): PruneStep & { left: () => number } {
  let left = rows;
  return {
    name,
    run(batch) {
      const n = Math.min(batch, left);
      left -= n;
      log.push(`${name}:${n}`);
      return n;
    },
    left: () => left,
  };
}

describe('pruner', () => {
  it('deletes in batches, yielding to the event loop between every two of them', async () => {
    const log: string[] = [];
    let rows = 0;
    const step: PruneStep = {
      name: 'events',
      run(batch) {
        const n = Math.min(batch, rows);
        rows -= n;
        log.push(`events:${n}`);
        return n;
      },
    };
    p = startPruner({ steps: [step, rowsStep('deliveries', 0, log)], everyMs: 3_600_000, batch: 10, onError: () => undefined });
    await p.pass();
    log.length = 0;
    rows = 25;
    // Something else waiting on the event loop runs between batches, not after the whole pass.
    let on = true;
    const tick = () => {
      if (!on) return;
      log.push('tick');
      setImmediate(tick);
    };
    setImmediate(tick);
    expect(await p.pass()).toEqual({ events: 25, deliveries: 0 });
    on = false;
    expect(log.filter((l) => l !== 'tick')).toEqual(['events:10', 'events:10', 'events:5', 'deliveries:0']);
    for (let i = 1; i < log.length; i++) if (log[i] !== 'tick') expect(log[i - 1]).toBe('tick');
  });

  it('a failing step is reported and the others still run', async () => {
    const log: string[] = [];
    const errors: string[] = [];
    const bad: PruneStep = {
      name: 'bad',
      run() {
        throw new Error('disk I/O error');
      },
    };
    p = startPruner({ steps: [bad, rowsStep('good', 3, log)], everyMs: 3_600_000, batch: 10, onError: (step, err) => errors.push(`${step}: ${(err as Error).message}`) });
    expect(await p.pass()).toEqual({ bad: 0, good: 0 });
    expect(errors).toEqual(['bad: disk I/O error', 'bad: disk I/O error']);
    expect(log).toEqual(['good:3', 'good:0']);
  });

  it('a pass asked for while one runs starts after it (the one under way may be past a step already)', async () => {
    const log: string[] = [];
    p = startPruner({ steps: [rowsStep('s', 0, log)], everyMs: 3_600_000, batch: 10, onError: () => undefined });
    // The pruner's first pass is under way from its start.
    const a = p.pass();
    const b = p.pass();
    expect(b).toBe(a);
    await a;
    expect(log).toEqual(['s:0', 's:0']);
  });

  it('close stops a pass between two batches', async () => {
    const log: string[] = [];
    const step = rowsStep('s', 1_000, log);
    p = startPruner({ steps: [step], everyMs: 3_600_000, batch: 10, onError: () => undefined });
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    await p.close();
    const done = log.length;
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(100);
    await new Promise((r) => setImmediate(r));
    expect(log).toHaveLength(done);
    expect(step.left()).toBe(1_000 - 10 * done);
  });
});
