// Dispatch first: while a run is being dispatched (an event that may queue one heard, the queue
// looked at, a claimed run's worktree made and its process spawned) the runner's other git work
// waits its turn: a finished run's commit and diff, spare worktrees, the cleanup. Starting a
// process holds the daemon's event loop until the child has exec'd (Node's spawn), and on a
// machine of few cores its CPU is the dispatch's: measured, the previous runs' commits starting
// during the next dispatch were most of its p99 (docs/performance.md, Runs).
//
// The work that waits is a queue, in order, at most PARALLEL git processes at a time (so that
// the work of many runs ending together does not start dozens of processes at once, each holding
// the event loop as it starts). A turn is never kept waiting for dispatches longer than
// MAX_DEFER_MS, however many follow one another (a burst of tasks).

/** The longest a piece of work waits for the dispatches to be over. */
export const MAX_DEFER_MS = 250;
/** Git processes of waiting work running at once. */
export const PARALLEL = 2;

interface Waiter {
  /** It waited MAX_DEFER_MS: it goes even while a dispatch is under way. */
  due: boolean;
  go: () => void;
}

export class DispatchGate {
  /** Dispatches under way, and turns running: a token each (releasing one twice does nothing). */
  private readonly holds = new Set<object>();
  private readonly running = new Set<object>();
  private readonly queue: Waiter[] = [];
  /** Who waits for quiet(). */
  private quietWaiters: (() => void)[] = [];

  constructor(
    private readonly maxDeferMs = MAX_DEFER_MS,
    private readonly parallel = PARALLEL,
  ) {}

  /** A dispatch under way; the returned function says it is over. */
  hold(): () => void {
    const token = {};
    this.holds.add(token);
    return () => {
      if (this.holds.delete(token)) this.next();
    };
  }

  /** Whether a dispatch is under way. */
  get busy(): boolean {
    return this.holds.size > 0;
  }

  /**
   * Waits for a turn: no dispatch under way (or MAX_DEFER_MS waited: a pacing wait, on real time)
   * and fewer than PARALLEL turns running; resolves with the function that ends the turn.
   */
  readonly turn = (): Promise<() => void> =>
    new Promise((resolve) => {
      const w: Waiter = {
        due: false,
        go: () => {
          clearTimeout(timer);
          const token = {};
          this.running.add(token);
          resolve(() => {
            if (this.running.delete(token)) this.next();
          });
        },
      };
      const timer = setTimeout(() => {
        w.due = true;
        this.next();
      }, this.maxDeferMs);
      timer.unref();
      this.queue.push(w);
      this.next();
    });

  /**
   * Resolves when no dispatch is under way (or after MAX_DEFER_MS), taking no turn: for work that
   * must go soon (a spare worktree) but not while a dispatch is spawning its run.
   */
  quiet(): Promise<void> {
    if (!this.holds.size) return Promise.resolve();
    return new Promise((resolve) => {
      const go = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(go, this.maxDeferMs);
      timer.unref();
      this.quietWaiters.push(go);
    });
  }

  /** Starts the waiting turns that may start now, in order. */
  private next(): void {
    if (!this.holds.size) for (const go of this.quietWaiters.splice(0)) go();
    while (this.running.size < this.parallel && this.queue.length && (this.holds.size === 0 || this.queue[0]!.due)) this.queue.shift()!.go();
  }
}
