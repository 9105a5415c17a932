// The approval timeout scheduler, kept free of the database and the daemon so its logic can be
// tested with a fake clock: one timer for the nearest expiry, re-armed after every change.

export interface Expiring {
  id: string;
  /** ISO 8601 */
  expiresAt: string;
}

export interface TimeoutPlan {
  /** Ids to decide now, in expiry order. */
  due: string[];
  /** When to look again (ms since epoch), or null when nothing is waiting. */
  wakeAt: number | null;
}

/** A failed timeout decision is tried again after this long rather than in a hot loop. */
export const RETRY_MS = 60_000;
/** setTimeout's ceiling (~24.8 days); a later expiry is reached by waking early and re-arming. */
export const MAX_DELAY_MS = 2 ** 31 - 1;

/** Which approvals are due at `now` and when the next one is; `retryAt` holds back failed ones. */
export function planTimeouts(candidates: readonly Expiring[], now: number, retryAt: ReadonlyMap<string, number> = new Map()): TimeoutPlan {
  const due: string[] = [];
  let wakeAt: number | null = null;
  for (const c of candidates) {
    const at = Math.max(Date.parse(c.expiresAt), retryAt.get(c.id) ?? -Infinity);
    if (at <= now) due.push(c.id);
    else wakeAt = wakeAt === null ? at : Math.min(wakeAt, at);
  }
  return { due, wakeAt };
}

/** The setTimeout delay for a plan: 0 when something is due, null when there is nothing to wait for. */
export function delayFor(plan: TimeoutPlan, now: number): number | null {
  if (plan.due.length) return 0;
  if (plan.wakeAt === null) return null;
  return Math.min(Math.max(plan.wakeAt - now, 0), MAX_DELAY_MS);
}

export interface SchedulerDeps {
  now(): number;
  /** Sets and clears the one wake-up (setTimeout by default; tests pass a fake clock's). */
  setTimer?(fn: () => Promise<void>, ms: number): unknown;
  clearTimer?(handle: unknown): void;
  /** Pending approvals expired by `now`, plus at least the next one to expire. */
  candidates(now: number): Expiring[] | Promise<Expiring[]>;
  /** Decides one expired approval; throwing defers it by RETRY_MS. */
  fire(id: string, now: number): void | Promise<void>;
  /**
   * Runs one pass's decisions together (one transaction for all of them, say); each decision's
   * failure is still its own (fire runs nested, in a savepoint), and a failure of the whole is a
   * failed read. Default: each on its own.
   */
  batch?(pass: () => Promise<void>): void | Promise<void>;
  /**
   * Whether this daemon runs the timeouts now (on a shared state, only the leader does; see
   * db/pg/leader.ts). Not: nothing is read or armed, until tick() is called again. Default: always.
   */
  active?(): boolean;
  /** A failure: of deciding `id`, or (id null) of reading what is waiting; either is retried after RETRY_MS. */
  onError(id: string | null, err: unknown): void;
}

export class TimeoutScheduler {
  private timer: unknown = null;
  private readonly retryAt = new Map<string, number>();
  /** The pass or read under way: one at a time, the next one queued behind it. */
  private running: Promise<void> | null = null;
  private next: { kind: 'tick' } | { kind: 'arm'; fired: Set<string> } | null = null;
  private stopped = false;

  constructor(private readonly deps: SchedulerDeps) {}

  /**
   * Decides everything due now, then sleeps until the next expiry. Runs from a timer callback,
   * where an escaping exception would end the daemon, so it never rejects: a failed read is
   * reported and retried after RETRY_MS. Resolves when the pass (and what was queued behind it) is done.
   */
  tick(): Promise<void> {
    return this.enqueue({ kind: 'tick' });
  }

  /**
   * Re-reads what is waiting and sets the one timer (after a change elsewhere: a new request, a
   * human decision). `fired` are ids just decided: if one is still due, firing it did nothing, and
   * it is held back rather than fired again at once. Never rejects (its callers, the event log
   * and tick, would swallow the error or die of it); a failed read is retried after RETRY_MS, so
   * the timer is never left unset while approvals wait.
   */
  arm(fired: ReadonlySet<string> = new Set()): Promise<void> {
    return this.enqueue({ kind: 'arm', fired: new Set(fired) });
  }

  private enqueue(job: { kind: 'tick' } | { kind: 'arm'; fired: Set<string> }): Promise<void> {
    if (this.running) {
      // A tick queued behind wins over an arm (it arms too); arms merge.
      if (!this.next || job.kind === 'tick') this.next = job;
      else if (this.next.kind === 'arm' && job.kind === 'arm') for (const id of job.fired) this.next.fired.add(id);
      return this.running;
    }
    const run = async () => {
      let j: typeof job | null = job;
      while (j) {
        if (j.kind === 'tick') await this.pass();
        else await this.read(j.fired);
        j = this.next;
        this.next = null;
      }
    };
    const current = run().finally(() => {
      if (this.running === current) this.running = null;
    });
    this.running = current;
    return current;
  }

  private async pass(): Promise<void> {
    if (this.stopped) return;
    this.clear();
    if (this.deps.active && !this.deps.active()) return;
    const fired = new Set<string>();
    try {
      const now = this.deps.now();
      const pass = async () => {
        for (const id of planTimeouts(await this.deps.candidates(now), now, this.retryAt).due) {
          try {
            await this.deps.fire(id, now);
            this.retryAt.delete(id);
            fired.add(id);
          } catch (err) {
            this.retryAt.set(id, now + RETRY_MS);
            this.report(id, err);
          }
        }
      };
      if (this.deps.batch) await this.deps.batch(pass);
      else await pass();
    } catch (err) {
      this.failed(err);
      return;
    }
    await this.read(fired);
  }

  private async read(fired: ReadonlySet<string>): Promise<void> {
    if (this.stopped) return;
    if (this.deps.active && !this.deps.active()) {
      this.clear();
      return;
    }
    try {
      const now = this.deps.now();
      const candidates = await this.deps.candidates(now);
      if (this.stopped) return;
      this.clear();
      let plan = planTimeouts(candidates, now, this.retryAt);
      const stuck = plan.due.filter((id) => fired.has(id));
      if (stuck.length) {
        for (const id of stuck) this.retryAt.set(id, now + RETRY_MS);
        plan = planTimeouts(candidates, now, this.retryAt);
      }
      // Forget hold-backs of approvals no longer waiting (decided by a person meanwhile).
      const waiting = new Set(candidates.map((c) => c.id));
      for (const id of this.retryAt.keys()) if (!waiting.has(id)) this.retryAt.delete(id);
      // The wake-up is at an instant: the read took time, so the delay is counted from now, not from before it.
      const delay = delayFor(plan, this.deps.now());
      if (delay !== null) this.schedule(delay);
    } catch (err) {
      this.failed(err);
    }
  }

  /** Whether a wake-up is set (for tests). */
  get armed(): boolean {
    return this.timer !== null;
  }

  stop(): void {
    this.stopped = true;
    this.clear();
  }

  /** Resolves once the pass or read under way (if any) is over (a daemon closing waits for it). */
  async settled(): Promise<void> {
    while (this.running) await this.running.catch(() => undefined);
  }

  private clear(): void {
    if (this.timer !== null) (this.deps.clearTimer ?? ((t) => clearTimeout(t as NodeJS.Timeout)))(this.timer);
    this.timer = null;
  }

  private schedule(delay: number): void {
    const fire = () => this.tick();
    if (this.deps.setTimer) this.timer = this.deps.setTimer(fire, delay);
    else {
      const t = setTimeout(() => void fire(), delay);
      t.unref();
      this.timer = t;
    }
  }

  /** Reading what is waiting failed: we no longer know when to wake, so look again after RETRY_MS. */
  private failed(err: unknown): void {
    this.report(null, err);
    this.clear();
    if (!this.stopped) this.schedule(RETRY_MS);
  }

  /** onError must not become the exception that kills the timer (or the daemon) either. */
  private report(id: string | null, err: unknown): void {
    try {
      this.deps.onError(id, err);
    } catch {
      // Nothing left to tell; the retry is already (or about to be) scheduled.
    }
  }
}
