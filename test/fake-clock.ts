import type { Clock } from '../src/lib/clock.js';

/**
 * A clock that moves only when a test says so. advance() fires the timers that fall due, in order,
 * synchronously (timers they set that fall due within the step fire too), so a test reads the
 * outcome right after the call, with no sleep.
 */
export class FakeClock implements Clock {
  private t: number;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void | Promise<void> }>();

  constructor(start = Date.parse('2030-01-01T00:00:00.000Z')) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void | Promise<void>, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** How many timers are set (a closed daemon must leave none). */
  get pending(): number {
    return this.timers.size;
  }

  /** When the next timer fires, or null. */
  get nextAt(): number | null {
    let next: number | null = null;
    for (const { at } of this.timers.values()) next = next === null ? at : Math.min(next, at);
    return next;
  }

  /**
   * Moves time forward without firing the timers that fall due: a busy event loop runs them late,
   * and what a request meets in between is what this shows. advance(0) then fires them.
   */
  skip(ms: number): void {
    this.t += ms;
  }

  advance(ms: number): void {
    this.advanceTo(this.t + ms);
  }

  advanceTo(target: number): void {
    for (let fn = this.takeDue(target); fn; fn = this.takeDue(target)) void fn();
    this.t = Math.max(this.t, target);
  }

  /** The earliest timer due by `target`, taken off the list with the time moved to it; null when none is. */
  private takeDue(target: number): (() => void | Promise<void>) | null {
    let due: [number, { at: number; fn: () => void | Promise<void> }] | undefined;
    for (const entry of this.timers) if (entry[1].at <= target && (!due || entry[1].at < due[1].at)) due = entry;
    if (!due) return null;
    this.timers.delete(due[0]);
    this.t = Math.max(this.t, due[1].at);
    return due[1].fn;
  }

  /** What pass() waits for before each step: the daemons on this clock gone quiet (startTestDaemon adds them). */
  private readonly quiet: (() => Promise<void>)[] = [];

  /** Adds a wait for quiet (a daemon whose state has nothing in flight). */
  waitsFor(quiet: () => Promise<void>): void {
    this.quiet.push(quiet);
  }

  private async settle(): Promise<void> {
    await new Promise((r) => setImmediate(r));
    for (const q of this.quiet) await q();
  }

  /**
   * advance(), for a daemon whose timed work is asynchronous (its state): first it waits for the
   * daemons on this clock to be quiet (a timer armed after a read that is still out), then after
   * each timer it waits for the work the callback returned and for the daemons to be quiet again,
   * so the work is done, and the timer it sets next is set, before the next one fires.
   */
  async pass(ms: number): Promise<void> {
    await this.passTo(this.t + ms);
  }

  async passTo(target: number): Promise<void> {
    await this.settle();
    for (let fn = this.takeDue(target); fn; fn = this.takeDue(target)) {
      await fn();
      await this.settle();
    }
    this.t = Math.max(this.t, target);
  }
}
