import { LEADER, serviceKey, type App } from '../../app.js';
import type { StoredEvent } from '../../events/outbox.js';
import { errorFields } from '../../kernel/log.js';
import { monotonic } from '../../lib/clock.js';
import { TimeoutScheduler } from '../../lib/timer.js';
import { eventChain, fireDue, fireOnEvent, releaseQueued, routinesWithQueued } from './fire.js';
import { TriggerIndex } from './match.js';
import * as store from './store.js';

// A daemon's routines at work: one timer for the next schedule time (the approval timeouts'
// scheduler, on the daemon's clock), and the events it hears matched against the triggers. Every
// daemon on a shared state runs both; fire.ts makes each firing happen on one of them.

/** Routines fired per timer pass; the rest follow after the event loop has served what waits. */
const BATCH = 25;
/** Events matched per pass, and how long one pass may take, before the event loop gets a turn. */
const EVENTS_PER_PASS = 500;
const PASS_MS = 10;
/** Events heard but not yet matched, at most: past it the oldest are dropped, with an error logged. */
const MAX_BACKLOG = 100_000;

const LIFECYCLE = new Set(['routine:created', 'routine:updated', 'routine:removed']);
/** Events after which a queued firing may go: the previous firing's work closed. */
const CLOSING = new Set(['task:transition', 'task:removed', 'mission:completed', 'mission:failed', 'mission:cancelled', 'mission:deleted']);

/** Whether an event may have closed a firing's work (a task done or failed or gone, a mission over). */
const closes = (e: StoredEvent): boolean => CLOSING.has(e.name) && (e.name !== 'task:transition' || e.data.to === 'done' || e.data.to === 'failed');

export interface RoutineWorker {
  /** Fires what is due (missed firings caught up) and arms the timer; releases queued firings whose work closed while no daemon ran. */
  start(): Promise<void>;
  close(): void;
}

/** A daemon's routines worker, per daemon (wired by the routines' server). */
export const ROUTINE_WORKER = serviceKey<RoutineWorker>('routines.worker');

/**
 * Makes the worker and starts hearing events at once, so that the triggers hear what the other
 * parts write from their first start-up pass on (leases and approvals that ran out while no daemon
 * ran); schedules start with start().
 */
export function routineWorker(app: App): RoutineWorker {
  const { clock, log } = app;
  const leader = app.services.get(LEADER);
  const scheduler = new TimeoutScheduler({
    now: () => clock.now(),
    setTimer: (fn, ms) => clock.setTimeout(fn, ms),
    clearTimer: (handle) => clock.clearTimeout(handle),
    // Schedules fire on the leading daemon alone; triggers on whichever daemon hears the event first (fireOnEvent's compare-and-set).
    active: () => leader.isLeader(),
    candidates: async (at) => await store.dueRoutines(app.db, new Date(at).toISOString(), BATCH),
    fire: async (name, at) => {
      for (const f of await fireDue(app, name, at)) log.debug('routine fired', { routine: name, firingId: f.id, status: f.status, scheduledAt: f.scheduledAt });
    },
    // A batch of due routines in one transaction (each firing in its own savepoint): one commit, not 25.
    batch: async (pass) => await app.events.write(pass),
    onError: (name, err) =>
      name === null
        ? log.error('reading routine schedules failed; trying again later', errorFields(err))
        : log.error('firing a routine failed; trying again later', { routine: name, ...errorFields(err) }),
  });

  // Triggers, compiled and indexed once per change of any routine.
  let index: Promise<TriggerIndex> | null = null;
  let known: TriggerIndex | null = null;
  const triggers = (): Promise<TriggerIndex> => {
    if (index) return index;
    const read = store.listTriggered(app.db).then((rows) => (known = new TriggerIndex(rows.map((r) => ({ name: r.name, trigger: r.trigger! })))));
    // A failed read is tried again at the next event.
    read.catch(() => index === read && (index = null));
    return (index = read);
  };

  const backlog: StoredEvent[] = [];
  let head = 0;
  let scheduled = false;
  let stopped = false;
  /** Whether some firing may be queued: closing events are worth looking at only then. */
  let waiting = true;

  const handle = async (e: StoredEvent) => {
    const matching = (await triggers()).matching(e.name, e.data);
    if (matching.length) {
      const cause = await eventChain(app, e);
      for (const name of matching) {
        try {
          await fireOnEvent(app, name, e, cause);
        } catch (err) {
          log.error('firing a routine on an event failed', { routine: name, eventId: e.id, ...errorFields(err) });
        }
      }
    }
    if (waiting && closes(e)) {
      const names = await routinesWithQueued(app);
      if (!names.length) waiting = false;
      for (const name of names) {
        try {
          await releaseQueued(app, name);
        } catch (err) {
          log.error('releasing a queued routine firing failed', { routine: name, ...errorFields(err) });
        }
      }
    }
  };

  /** A pass under way: one at a time, so that a routine's firings (and its per-minute count) follow one another. */
  let passing = false;
  const pass = async () => {
    scheduled = false;
    // The pass under way goes on to what was heard meanwhile, or schedules the next one.
    if (stopped || passing) return;
    passing = true;
    const until = monotonic() + PASS_MS;
    try {
      for (let n = 0; head < backlog.length && n < EVENTS_PER_PASS && (n === 0 || monotonic() < until); n++) {
        const e = backlog[head++]!;
        try {
          await handle(e);
        } catch (err) {
          log.error('matching an event against routine triggers failed', { eventId: e.id, ...errorFields(err) });
        }
      }
    } finally {
      passing = false;
    }
    if (head >= backlog.length) {
      backlog.length = 0;
      head = 0;
    } else {
      schedule();
    }
  };
  const schedule = () => {
    if (scheduled || stopped) return;
    scheduled = true;
    setImmediate(() => void pass());
  };

  // Heard after each commit, in id order on every daemon. A change of a routine re-reads the
  // triggers and re-arms the timer at once; matching waits for the event loop to be free, so a
  // write never waits for the triggers its event is matched against.
  const unsubscribe = app.events.subscribe((e) => {
    if (LIFECYCLE.has(e.name)) {
      // Re-indexed when next needed, not at each of a thousand routines made in a row.
      index = null;
      known = null;
      void scheduler.arm();
      backlog.push(e);
      schedule();
      return;
    }
    if (e.name === 'routine:queued') waiting = true;
    // Until the triggers are read, every event waits in the backlog (handle() matches it then).
    if (known && !known.hears(e.name) && !(waiting && closes(e))) return;
    if (backlog.length - head >= MAX_BACKLOG) {
      head++;
      log.error('routine triggers are behind by more events than they may hold; the oldest was dropped', { eventId: e.id });
    }
    backlog.push(e);
    schedule();
  });

  let unlead = (): void => undefined;
  return {
    async start() {
      unlead = leader.onChange((leads) => leads && void scheduler.tick());
      await scheduler.tick();
      // Queued firings whose previous work closed while no daemon ran.
      for (const name of await routinesWithQueued(app)) {
        try {
          await releaseQueued(app, name);
        } catch (err) {
          log.error('releasing a queued routine firing failed', { routine: name, ...errorFields(err) });
        }
      }
    },
    close() {
      stopped = true;
      unsubscribe();
      unlead();
      scheduler.stop();
    },
  };
}
