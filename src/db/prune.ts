import { serviceKey } from '../lib/services.js';

// Retention of the state database in small steps. Each step deletes one bounded batch in its own
// short transaction and the next waits for the event loop's next turn, so requests never queue
// behind one long DELETE and the write lock is held a few milliseconds at a time. A pass runs every
// `everyMs` and goes on until every step has nothing left over its limits; pages freed by a pass
// are reused by the next inserts, so the file stops growing once retention is reached.

export interface PruneStep {
  name: string;
  /** Deletes at most `batch` rows; returns how many went (fewer than `batch`: nothing left for now). */
  run(batch: number): number | Promise<number>;
}

export interface Pruner {
  /** Runs a pass now, or joins the one under way; resolves with the rows each step dropped. */
  pass(): Promise<Record<string, number>>;
  /** Stops; resolves once a pass under way has stopped between two batches. */
  close(): Promise<void>;
}
export const PRUNER = serviceKey<Pruner>('pruner');

export interface PrunerOptions {
  steps: PruneStep[];
  /** Between the end of one pass and the start of the next. */
  everyMs: number;
  /** Rows per batch (per transaction). */
  batch: number;
  /** Whether this daemon prunes now (on a shared state the leader does); default always. */
  active?(): boolean;
  /** A step that throws is reported and skipped until the next pass. */
  onError(step: string, err: unknown): void;
  /** After a pass that dropped something. */
  onPruned?(counts: Record<string, number>): void;
}

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

export function startPruner(o: PrunerOptions): Pruner {
  let closed = false;
  let running: Promise<Record<string, number>> | null = null;
  // The period is housekeeping, not a deadline a test waits for: tests call pass() (the cut-offs
  // themselves are read from the daemon's clock by the steps).
  let timer: NodeJS.Timeout | null = null;

  const schedule = () => {
    if (closed) return;
    timer = setTimeout(() => {
      timer = null;
      void pass();
    }, o.everyMs);
    timer.unref();
  };

  async function run(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    if (o.active && !o.active()) return counts;
    for (const step of o.steps) {
      counts[step.name] = 0;
      for (;;) {
        await nextTurn();
        if (closed) return counts;
        let n: number;
        try {
          n = await step.run(o.batch);
        } catch (err) {
          o.onError(step.name, err);
          break;
        }
        counts[step.name]! += n;
        if (n < o.batch) break;
      }
    }
    return counts;
  }

  let again: Promise<Record<string, number>> | null = null;

  /** A pass that starts now, or right after the one under way (which may be past a step already). */
  function pass(): Promise<Record<string, number>> {
    if (running) {
      again ??= running.then(() => {
        again = null;
        return pass();
      });
      return again;
    }
    if (timer) clearTimeout(timer);
    timer = null;
    const current = run();
    running = current;
    void current.then((counts) => {
      running = null;
      schedule();
      if (!o.onPruned || !Object.values(counts).some((n) => n > 0)) return;
      try {
        o.onPruned(counts);
      } catch {
        // A report that fails must not stop the pruning.
      }
    });
    return current;
  }

  // The first pass on the next turn: a start-up never waits for it.
  void pass();
  return {
    pass,
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await running?.catch(() => undefined);
    },
  };
}
