import { lockKey } from '../../db/open.js';
import type { App } from '../../app.js';
import type { StoredEvent } from '../../events/outbox.js';
import { compileFilter } from '../../events/filter.js';
import { AppError } from '../../kernel/errors.js';
import { zodDetails } from '../../kernel/server.js';
import { uuidv7 } from '../../lib/ids.js';
import { nowIso } from '../../lib/time.js';
import { MissionIn } from '../missions/schema.js';
import { createMission, getMission, moveMission } from '../missions/service.js';
import type { ParamValue } from '../playbooks/schema.js';
import { runPlaybook } from '../playbooks/service.js';
import { fill } from '../playbooks/template.js';
import { TaskIn } from '../tasks/schema.js';
import { createTask, getTask } from '../tasks/service.js';
import { dueSince } from './cron.js';
import { compileDataFilter } from './filter.js';
import type { Action, Firing, Trigger } from './schema.js';
import { requireRecord } from './service.js';
import * as store from './store.js';
import { KEEP_FIRINGS, MAX_DEPTH, MAX_QUEUED, MISFIRE_GRACE_MS } from './values.js';
import { firingVars } from './vars.js';

// Firing a routine: each firing is recorded, and its action run, in one transaction. Whoever
// records a firing first (a daemon's scheduler, another daemon's, a person) is the only one: the
// schedule's next time and the newest event decided on move forward compare-and-set, and a
// firing's key (its schedule time, its event, a manual firing's id) is unique per routine.

type Created = Firing['created'];
const NOTHING: Created = { taskIds: [], missionId: null };
const iso = (t: number) => new Date(t).toISOString();

interface Attempt {
  reason: Firing['reason'];
  key: string;
  scheduledAt: string | null;
  /** What {{firing.time}} says: the schedule time, the event's, now. */
  time: number;
  event: StoredEvent | null;
  /** The chain of routines that led to the cause (without this one). */
  cause: string[];
  missed: number;
}

/** Whether an event is one a trigger hears: its name, then its data. */
function hears(trigger: Trigger, e: StoredEvent): boolean {
  return compileFilter(trigger.event, 'trigger.event')(e.name) && compileDataFilter(trigger.filter)(e.data);
}

/**
 * The routines that led to an event: a routine's event carries its chain; an event about a task or
 * mission a firing created (a run of it, a transition) carries the chain that created it.
 */
export async function eventChain(app: App, e: StoredEvent): Promise<string[]> {
  const d = e.data;
  if (e.name.startsWith('routine:')) return Array.isArray(d.chain) ? d.chain.filter((x): x is string => typeof x === 'string') : [];
  for (const k of ['taskId', 'missionId']) {
    const id = d[k];
    if (typeof id === 'string') {
      const chain = await store.chainOf(app.db, id);
      if (chain) return chain;
    }
  }
  return [];
}

const OPEN_MISSION = new Set(['draft', 'active', 'paused']);

/** What of a firing's work is still open ("task … is in_progress"), or null when it is all closed or gone. */
async function openWork(app: App, f: store.FiringRecord | null): Promise<string | null> {
  if (!f) return null;
  if (f.created.missionId) {
    try {
      const m = await getMission(app, f.created.missionId);
      return OPEN_MISSION.has(m.status) ? `mission ${m.id} of firing ${f.id} is ${m.status}` : null;
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') return null;
      throw err;
    }
  }
  for (const id of f.created.taskIds) {
    const t = await getTask(app, id);
    if (t && t.status !== 'done' && t.status !== 'failed') return `task ${t.id} of firing ${f.id} is ${t.status}`;
  }
  return null;
}

/** Creates what the action says, filled with the firing's values; an AppError if it cannot. */
async function perform(app: App, action: Action, vars: Record<string, unknown>): Promise<Created> {
  if ('playbook' in action) {
    const { mission, tasks } = await runPlaybook(app, action.playbook, fill(action.params, vars) as Record<string, ParamValue>);
    if (action.start) await moveMission(app, mission.id, 'start');
    return { taskIds: tasks.map((t) => t.id), missionId: mission.id };
  }
  if ('task' in action) {
    const parsed = TaskIn.safeParse(fill(action.task, vars));
    if (!parsed.success) {
      const details = zodDetails('action.task', parsed.error);
      throw new AppError('unprocessable', `the filled task is not valid: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, { details });
    }
    return { taskIds: [(await createTask(app, parsed.data)).id], missionId: null };
  }
  const parsed = MissionIn.safeParse(fill(action.mission, vars));
  if (!parsed.success) {
    const details = zodDetails('action.mission', parsed.error);
    throw new AppError('unprocessable', `the filled mission is not valid: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, { details });
  }
  const m = await createMission(app, parsed.data, 'action.mission');
  if (action.start) await moveMission(app, m.id, 'start');
  return { taskIds: m.taskIds, missionId: m.id };
}

/**
 * Runs a recorded firing's action in a savepoint: what it creates commits with the record; a
 * refusal (a playbook gone, a filled template that is not valid) leaves nothing but the record,
 * marked failed with the reason.
 */
async function run(app: App, f: store.FiringRecord, action: Action, vars: Record<string, unknown>): Promise<store.FiringRecord> {
  const now = nowIso(app.clock);
  let created: Created;
  try {
    created = await app.events.write(async () => await perform(app, action, vars));
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    await store.settleFiring(app.db, f.id, { status: 'failed', detail: err.message, created: NOTHING, firedAt: now });
    app.events.emit('routine:failed', { routine: f.routine, firingId: f.id, error: err.message, chain: f.chain });
    return { ...f, status: 'failed', detail: err.message, firedAt: now, vars: null };
  }
  await store.insertWork(app.db, created.missionId ? [created.missionId, ...created.taskIds] : created.taskIds, f.routine, f.chain, now);
  await store.settleFiring(app.db, f.id, { status: 'fired', detail: f.detail, created, firedAt: now });
  app.events.emit('routine:fired', {
    routine: f.routine,
    firingId: f.id,
    reason: f.reason,
    scheduledAt: f.scheduledAt,
    eventId: f.eventId,
    taskIds: created.taskIds,
    missionId: created.missionId,
    chain: f.chain,
  });
  return { ...f, status: 'fired', created, firedAt: now, vars: null };
}

type SkipWhy = 'concurrency' | 'missed' | 'rate' | 'queue_full';

/**
 * One firing of a routine, inside the caller's transaction, once the caller has claimed the
 * occasion (moved the schedule or the newest event on). Null when nothing was recorded: another
 * daemon recorded this key first, or a trigger storm's further events in the same minute.
 */
async function attempt(app: App, r: store.RoutineRecord, a: Attempt, forced?: { why: SkipWhy; detail: string }): Promise<store.FiringRecord | null> {
  const db = app.db;
  const chain = [...a.cause, r.name];
  const f: store.FiringRecord = {
    id: uuidv7(),
    routine: r.name,
    fireKey: a.key,
    reason: a.reason,
    status: 'fired',
    scheduledAt: a.scheduledAt,
    firedAt: nowIso(app.clock),
    eventId: a.event?.id ?? null,
    eventName: a.event?.name ?? null,
    missed: a.missed,
    detail: null,
    created: NOTHING,
    chain,
    vars: null,
  };
  const record = async (status: Firing['status'], detail: string | null, vars: Record<string, unknown> | null = null): Promise<store.FiringRecord | null> => {
    const rec = { ...f, status, detail, vars };
    if (!(await store.insertFiring(db, rec))) return null;
    await store.pruneFirings(db, r.name, KEEP_FIRINGS);
    return rec;
  };
  const skip = async (why: SkipWhy, detail: string): Promise<store.FiringRecord | null> => {
    const rec = await record('skipped', detail);
    if (rec) app.events.emit('routine:skipped', { routine: r.name, firingId: rec.id, why, detail, chain });
    return rec;
  };
  if (forced) return await skip(forced.why, forced.detail);
  // Past the depth limit: recorded, but with no event, which would only carry the chain further.
  if (chain.length > MAX_DEPTH) return await record('skipped', `depth limit: ${chain.join(' → ')} passes through more than ${MAX_DEPTH} routines`);

  if (a.reason === 'event') {
    const now = app.clock.now();
    let start = r.rateWindowStart === null ? -Infinity : Date.parse(r.rateWindowStart);
    let count = r.rateCount;
    if (now - start >= 60_000) {
      start = now;
      count = 0;
    }
    await store.setRate(db, r.name, iso(start), count + 1);
    if (count >= r.maxFiringsPerMinute) {
      // The first event past the bound is recorded and said; the rest of the minute's are dropped.
      if (count > r.maxFiringsPerMinute) return null;
      return await skip('rate', `${r.maxFiringsPerMinute} firings in the minute from ${iso(start)} (maxFiringsPerMinute); further events until ${iso(start + 60_000)} are dropped without a record`);
    }
  }

  const vars = firingVars(r, { firingId: f.id, time: a.time, reason: a.reason, event: a.event });
  if (r.concurrency !== 'allow') {
    const queued = r.concurrency === 'queue' ? await store.queuedFirings(db, r.name) : [];
    const open = queued.length ? `${queued.length} firing(s) already wait` : await openWork(app, await store.lastFired(db, r.name));
    if (open) {
      if (r.concurrency === 'skip') return await skip('concurrency', `the previous firing's work is still open: ${open}`);
      if (queued.length >= MAX_QUEUED) return await skip('queue_full', `${queued.length} firings already wait for the previous firing's work (at most ${MAX_QUEUED})`);
      const rec = await record('queued', `waits: ${open}`, vars);
      if (rec) app.events.emit('routine:queued', { routine: r.name, firingId: rec.id, chain });
      return rec;
    }
  }
  const rec = await record('fired', null);
  return rec && (await run(app, rec, r.action, vars));
}

/**
 * Fires a scheduled routine that is due at `now` (the scheduler's call; a no-op when it is not due
 * or another daemon fired it). Times missed while no daemon ran (later than MISFIRE_GRACE_MS) are
 * caught up per catchUp: none records them skipped, one fires once for all of them.
 */
export async function fireDue(app: App, name: string, now: number): Promise<store.FiringRecord[]> {
  return await app.events.write(async () => {
    await lockKey(app.db, 'routine', name);
    const r = await store.getRoutine(app.db, name);
    if (!r?.enabled || !r.schedule || r.nextFireAt === null) return [];
    const first = Date.parse(r.nextFireAt);
    if (first > now) return [];
    const due = dueSince(r.schedule, first, now);
    if (!(await store.advanceSchedule(app.db, name, r.nextFireAt, due.next === null ? null : iso(due.next)))) return [];
    const onTime = now - due.last <= MISFIRE_GRACE_MS;
    const missed = onTime ? due.count - 1 : due.count;
    const out: (store.FiringRecord | null)[] = [];
    const base = { event: null, cause: [], scheduledAt: iso(due.last), time: due.last };
    if (missed > 0 && r.catchUp === 'none') {
      const count = `${missed}${due.capped ? ' or more' : ''}`;
      const detail = `missed ${count} schedule time(s) from ${iso(first)} while no daemon ran; catchUp is none`;
      out.push(await attempt(app, r, { ...base, reason: 'catch_up', key: `missed:${iso(first)}`, scheduledAt: iso(first), time: first, missed: missed - 1 }, { why: 'missed', detail }));
    }
    if (onTime) out.push(await attempt(app, r, { ...base, reason: 'schedule', key: `at:${iso(due.last)}`, missed: r.catchUp === 'one' ? missed : 0 }));
    else if (r.catchUp === 'one') out.push(await attempt(app, r, { ...base, reason: 'catch_up', key: `at:${iso(due.last)}`, missed: missed - 1 }));
    return out.filter((f): f is store.FiringRecord => f !== null);
  });
}

/**
 * Fires a triggered routine for an event, once across every daemon that hears it: the routine's
 * newest decided event moves forward compare-and-set. A routine's own events, and events whose
 * chain already holds it (its own work's), are passed over without a record.
 */
export async function fireOnEvent(app: App, name: string, e: StoredEvent, cause: string[]): Promise<store.FiringRecord | null> {
  if (cause.includes(name) || (e.name.startsWith('routine:') && e.data.routine === name)) return null;
  return await app.events.write(async () => {
    // Its per-minute count is read and written here, by whichever daemon hears the event.
    await lockKey(app.db, 'routine', name);
    const r = await store.getRoutine(app.db, name);
    if (!r?.enabled || !r.trigger || e.id <= r.lastEventId || !hears(r.trigger, e)) return null;
    if (!(await store.advanceEvent(app.db, name, e.id))) return null;
    return await attempt(app, r, { reason: 'event', key: `event:${e.id}`, scheduledAt: null, time: Date.parse(e.timestamp), event: e, cause, missed: 0 });
  });
}

/** Fires a routine now, by hand, enabled or not; concurrency still applies (the answer says if it was skipped). */
export async function fireByHand(app: App, name: string): Promise<Firing> {
  return await app.events.write(async () => {
    const r = await requireRecord(app, name);
    const key = `manual:${uuidv7()}`;
    const f = await attempt(app, r, { reason: 'manual', key, scheduledAt: null, time: app.clock.now(), event: null, cause: [], missed: 0 });
    return store.firingOut(f!);
  });
}

/** Releases the oldest queued firing of a routine once the previous firing's work is closed. */
export async function releaseQueued(app: App, name: string): Promise<store.FiringRecord | null> {
  // Looked at first without the write lock: work usually stays open through many events.
  if (!(await store.queuedFirings(app.db, name)).length || (await openWork(app, await store.lastFired(app.db, name)))) return null;
  return await app.events.write(async () => {
    const queued = await store.queuedFirings(app.db, name);
    const r = queued.length ? await store.getRoutine(app.db, name) : null;
    if (!r || (await openWork(app, await store.lastFired(app.db, name)))) return null;
    const q = queued[0]!;
    if (!(await store.releaseQueued(app.db, q.id))) return null;
    return await run(app, { ...q, status: 'fired' }, r.action, q.vars ?? {});
  });
}

/** Routines with firings waiting, for the worker to try releasing after work closes. */
export const routinesWithQueued = async (app: App): Promise<string[]> => await store.routinesWithQueued(app.db);
