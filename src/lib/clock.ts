/**
 * Where the daemon's timers and deadlines take their time from. The daemon uses the system clock;
 * tests pass a fake one and move it forward, so nothing that waits for a deadline needs a sleep.
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
