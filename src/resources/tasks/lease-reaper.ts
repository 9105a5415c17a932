import { LEADER, serviceKey, type App } from '../../app.js';
import { errorFields } from '../../kernel/log.js';
import { TimeoutScheduler } from '../../lib/timer.js';
import { expireLease, expiringLeases } from './service.js';

/** The daemon's lease reaper: one timer for the nearest lease expiry, re-armed after each claim. */
export interface LeaseReaper {
  /** Releases every lease run out by now, then sleeps until the next expiry (tests call it after moving the clock). */
  tick(): Promise<void>;
  close(): void;
}

export const LEASE_REAPER = serviceKey<LeaseReaper>('tasks.leaseReaper');

/**
 * Starts releasing tasks whose claim lease ran out. Leases live in the database, not in memory: on
 * start (before the daemon listens) the ones that ran out while it was down are released at once,
 * so a dead agent's task never stays held across a restart. Time is the daemon's clock (a test's fake).
 */
export async function startLeaseReaper(app: App): Promise<LeaseReaper> {
  const { clock } = app;
  const leader = app.services.get(LEADER);
  const scheduler = new TimeoutScheduler({
    now: () => clock.now(),
    setTimer: (fn, ms) => clock.setTimeout(fn, ms),
    clearTimer: (handle) => clock.clearTimeout(handle),
    // On a shared state the leading daemon alone; another takes over when it goes.
    active: () => leader.isLeader(),
    candidates: async (at) => await expiringLeases(app, at),
    fire: async (id, at) => {
      const released = await expireLease(app, id, at);
      if (released) app.log.info('task lease expired; task back to pending', { taskId: id, agent: released.agent });
    },
    onError: (id, err) =>
      id === null
        ? app.log.error('reading task leases failed; trying again later', errorFields(err))
        : app.log.error('releasing an expired task lease failed; trying again later', { taskId: id, ...errorFields(err) }),
  });
  // Heard after the claim's transaction commits, so the scheduler reads the new lease. Heartbeats
  // only move expiries later: a wake-up set for the old expiry finds nothing due and re-arms.
  const unsubscribe = app.events.subscribe((e) => {
    if (e.name === 'task:claimed') void scheduler.arm();
  });
  const unlead = leader.onChange((leads) => leads && void scheduler.tick());
  await scheduler.tick();
  return {
    tick: async () => await scheduler.tick(),
    close() {
      unsubscribe();
      unlead();
      scheduler.stop();
    },
  };
}
