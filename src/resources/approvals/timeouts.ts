import { LEADER, type App } from '../../app.js';
import { errorFields } from '../../kernel/log.js';
import { expiringApprovals, resolveExpired } from './service.js';
import { TimeoutScheduler } from '../../lib/timer.js';

/**
 * Starts deciding expired approvals for the daemon's lifetime. Timeouts live in the database, not
 * in memory: on start the overdue ones are decided at once (before the daemon listens) and the
 * rest armed, so a pending timeout still fires after a restart.
 */
export async function startApprovalTimeouts(app: App): Promise<{ close(): void }> {
  const { clock } = app;
  const leader = app.services.get(LEADER);
  const scheduler = new TimeoutScheduler({
    now: () => clock.now(),
    setTimer: (fn, ms) => clock.setTimeout(fn, ms),
    clearTimer: (handle) => clock.clearTimeout(handle),
    // On a shared state the leading daemon alone; another takes over when it goes.
    active: () => leader.isLeader(),
    candidates: async (at) => await expiringApprovals(app, at),
    fire: async (id, at) => {
      const a = await resolveExpired(app, id, at);
      if (a) app.log.info('approval timed out', { approvalId: id, status: a.status, taskId: a.taskId });
    },
    onError: (id, err) =>
      id === null
        ? app.log.error('reading approval timeouts failed; trying again later', errorFields(err))
        : app.log.error('deciding an expired approval failed; trying again later', { approvalId: id, ...errorFields(err) }),
  });
  // Events are heard after their transaction commits, so the scheduler reads the new state.
  const unsubscribe = app.events.subscribe((e) => {
    if (e.name === 'approval:requested' || e.name === 'approval:resolved') void scheduler.arm();
  });
  const unlead = leader.onChange((leads) => leads && void scheduler.tick());
  await scheduler.tick();
  return {
    close() {
      unsubscribe();
      unlead();
      scheduler.stop();
    },
  };
}
