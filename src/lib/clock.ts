/**
 * The one seam time is read through. `Clock` is the time the daemon's rules run on (timestamps it
 * writes, deadlines, expiries, cooldowns): the daemon uses the system clock; tests pass a fake one
 * and move it forward, so nothing that waits for a deadline needs a sleep. Code takes a Clock
 * (`app.clock`) rather than reading the time itself; only the composition root and the process
 * entry points pick `systemClock` (test/clock.test.ts lists who may, and why).
 */
export interface Clock {
  now(): number;
  /**
   * Calls `fn` once after `ms`; the returned handle never keeps the process alive on its own. A
   * callback whose work is asynchronous returns its promise (which never rejects), so a fake
   * clock can wait for that work before it fires the next timer.
   */
  setTimeout(fn: () => void | Promise<void>, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(() => void fn(), ms);
    t.unref();
    return t;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * Milliseconds since an arbitrary start, never going back: for durations a log line or a metric
 * reports, pacing, and waits on real things (a process, a socket, a statement's time limit). Not a
 * Clock's: a test's fake time must not stop a real wait from ending, and no test asserts these.
 */
export const monotonic = (): number => performance.now();
