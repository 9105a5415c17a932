import { stmt, type DB } from '../../db/open.js';
import type { Action, Firing, Schedule, Trigger } from './schema.js';
import type { CATCH_UP, CONCURRENCY, FIRING_REASONS, FIRING_STATUSES } from './values.js';

export interface RoutineRecord {
  name: string;
  description: string | null;
  enabled: boolean;
  schedule: Schedule | null;
  trigger: Trigger | null;
  action: Action;
  concurrency: (typeof CONCURRENCY)[number];
  catchUp: (typeof CATCH_UP)[number];
  maxFiringsPerMinute: number;
  /** The next schedule time (ISO), null when disabled or triggered. */
  nextFireAt: string | null;
  /** The newest event this routine has decided on (fired, skipped or queued). */
  lastEventId: number;
  rateWindowStart: string | null;
  rateCount: number;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  name: string;
  description: string | null;
  enabled: number;
  schedule: string | null;
  trigger_spec: string | null;
  action: string;
  concurrency: RoutineRecord['concurrency'];
  catch_up: RoutineRecord['catchUp'];
  max_firings_per_minute: number;
  next_fire_at: string | null;
  last_event_id: number;
  rate_window_start: string | null;
  rate_count: number;
  created_at: string;
  updated_at: string;
}

const COLUMNS =
  'name, description, enabled, schedule, trigger_spec, action, concurrency, catch_up, max_firings_per_minute, next_fire_at, last_event_id, rate_window_start, rate_count, created_at, updated_at';

const json = <T>(s: string | null): T | null => (s === null ? null : (JSON.parse(s) as T));

const toRecord = (r: Row): RoutineRecord => ({
  name: r.name,
  description: r.description,
  enabled: r.enabled === 1,
  schedule: json<Schedule>(r.schedule),
  trigger: json<Trigger>(r.trigger_spec),
  action: JSON.parse(r.action) as Action,
  concurrency: r.concurrency,
  catchUp: r.catch_up,
  maxFiringsPerMinute: Number(r.max_firings_per_minute),
  nextFireAt: r.next_fire_at,
  lastEventId: Number(r.last_event_id),
  rateWindowStart: r.rate_window_start,
  rateCount: Number(r.rate_count),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const values = (r: RoutineRecord) => [
  r.name,
  r.description,
  r.enabled ? 1 : 0,
  r.schedule ? JSON.stringify(r.schedule) : null,
  r.trigger ? JSON.stringify(r.trigger) : null,
  JSON.stringify(r.action),
  r.concurrency,
  r.catchUp,
  r.maxFiringsPerMinute,
  r.nextFireAt,
  r.lastEventId,
  r.rateWindowStart,
  r.rateCount,
  r.createdAt,
  r.updatedAt,
];

export async function getRoutine(db: DB, name: string): Promise<RoutineRecord | null> {
  const r = (await stmt(db, `SELECT ${COLUMNS} FROM routines WHERE name = ?`).get(name)) as Row | undefined;
  return r ? toRecord(r) : null;
}

/** By name: routines are made by people, a few hundred at most, so the list is whole. */
export async function listRoutines(db: DB): Promise<RoutineRecord[]> {
  return ((await stmt(db, `SELECT ${COLUMNS} FROM routines ORDER BY name`).all()) as Row[]).map(toRecord);
}

/** Enabled routines with a trigger: what each event is matched against. */
export async function listTriggered(db: DB): Promise<RoutineRecord[]> {
  return ((await stmt(db, `SELECT ${COLUMNS} FROM routines WHERE enabled = 1 AND trigger_spec IS NOT NULL ORDER BY name`).all()) as Row[]).map(toRecord);
}

export async function insertRoutine(db: DB, r: RoutineRecord): Promise<void> {
  await stmt(db, `INSERT INTO routines (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(...values(r));
}

export async function updateRoutine(db: DB, r: RoutineRecord): Promise<void> {
  await stmt(
    db,
    `UPDATE routines SET description = ?, enabled = ?, schedule = ?, trigger_spec = ?, action = ?, concurrency = ?, catch_up = ?, max_firings_per_minute = ?,
       next_fire_at = ?, last_event_id = ?, rate_window_start = ?, rate_count = ?, updated_at = ? WHERE name = ?`,
  ).run(...values(r).slice(1, 13), r.updatedAt, r.name);
}

export async function deleteRoutine(db: DB, name: string): Promise<boolean> {
  return (await stmt(db, 'DELETE FROM routines WHERE name = ?').run(name)).changes > 0;
}

export interface Due {
  id: string;
  expiresAt: string;
}

/**
 * What the scheduler needs: up to `limit` routines due by `cutoff` (the rest are read after these
 * have fired, so one pass never holds the daemon long), plus the first still to come when fewer
 * are due. Both read the next_fire_at index in order.
 */
export async function dueRoutines(db: DB, cutoff: string, limit: number): Promise<Due[]> {
  const due = (await stmt(db, 'SELECT name AS id, next_fire_at AS "expiresAt" FROM routines WHERE next_fire_at IS NOT NULL AND next_fire_at <= ? ORDER BY next_fire_at LIMIT ?').all(
    cutoff,
    limit,
  )) as Due[];
  if (due.length >= limit) return due;
  const next = (await stmt(db, 'SELECT name AS id, next_fire_at AS "expiresAt" FROM routines WHERE next_fire_at > ? ORDER BY next_fire_at LIMIT 1').get(cutoff)) as Due | undefined;
  return next ? [...due, next] : due;
}

/** Moves a schedule on, compare-and-set: false when another daemon already did (it fired that time). */
export async function advanceSchedule(db: DB, name: string, from: string, to: string | null): Promise<boolean> {
  return (await stmt(db, 'UPDATE routines SET next_fire_at = ? WHERE name = ? AND next_fire_at = ?').run(to, name, from)).changes === 1;
}

/** Records a decision on an event, compare-and-set: false when this routine already decided on it (or a later one). */
export async function advanceEvent(db: DB, name: string, eventId: number): Promise<boolean> {
  return (await stmt(db, 'UPDATE routines SET last_event_id = ? WHERE name = ? AND last_event_id < ?').run(eventId, name, eventId)).changes === 1;
}

export async function setRate(db: DB, name: string, windowStart: string, count: number): Promise<void> {
  await stmt(db, 'UPDATE routines SET rate_window_start = ?, rate_count = ? WHERE name = ?').run(windowStart, count, name);
}

// Firings.

export interface FiringRecord extends Firing {
  fireKey: string;
  /** The template variables of a queued firing, to fill its action when it is released. */
  vars: Record<string, unknown> | null;
}

interface FiringRow {
  id: string;
  routine: string;
  fire_key: string;
  reason: (typeof FIRING_REASONS)[number];
  status: (typeof FIRING_STATUSES)[number];
  scheduled_at: string | null;
  fired_at: string;
  event_id: number | null;
  event_name: string | null;
  missed: number;
  detail: string | null;
  created: string;
  chain: string;
  vars: string | null;
}

const FIRING_COLUMNS = 'id, routine, fire_key, reason, status, scheduled_at, fired_at, event_id, event_name, missed, detail, created, chain, vars';

const toFiring = (r: FiringRow): FiringRecord => ({
  id: r.id,
  routine: r.routine,
  fireKey: r.fire_key,
  reason: r.reason,
  status: r.status,
  scheduledAt: r.scheduled_at,
  firedAt: r.fired_at,
  eventId: r.event_id === null ? null : Number(r.event_id),
  eventName: r.event_name,
  missed: Number(r.missed),
  detail: r.detail,
  created: JSON.parse(r.created) as Firing['created'],
  chain: JSON.parse(r.chain) as string[],
  vars: json<Record<string, unknown>>(r.vars),
});

/** Public fields only. */
export const firingOut = ({ fireKey: _k, vars: _v, ...f }: FiringRecord): Firing => f;

/** Records a firing; false when this routine already has one with this key (another daemon's). */
export async function insertFiring(db: DB, f: FiringRecord): Promise<boolean> {
  return (
    (
      await stmt(db, `INSERT INTO routine_firings (${FIRING_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (routine, fire_key) DO NOTHING`).run(
        f.id,
        f.routine,
        f.fireKey,
        f.reason,
        f.status,
        f.scheduledAt,
        f.firedAt,
        f.eventId,
        f.eventName,
        f.missed,
        f.detail,
        JSON.stringify(f.created),
        JSON.stringify(f.chain),
        f.vars === null ? null : JSON.stringify(f.vars),
      )
    ).changes === 1
  );
}

export async function settleFiring(db: DB, id: string, s: { status: Firing['status']; detail: string | null; created: Firing['created']; firedAt?: string }): Promise<void> {
  await stmt(db, 'UPDATE routine_firings SET status = ?, detail = ?, created = ?, fired_at = COALESCE(?, fired_at), vars = NULL WHERE id = ?').run(
    s.status,
    s.detail,
    JSON.stringify(s.created),
    s.firedAt ?? null,
    id,
  );
}

/** Compare-and-set a queued firing to its outcome: false when another daemon released it first. */
export async function releaseQueued(db: DB, id: string): Promise<boolean> {
  return (await stmt(db, "UPDATE routine_firings SET status = 'fired' WHERE id = ? AND status = 'queued'").run(id)).changes === 1;
}

export async function getFiring(db: DB, id: string): Promise<FiringRecord | null> {
  const r = (await stmt(db, `SELECT ${FIRING_COLUMNS} FROM routine_firings WHERE id = ?`).get(id)) as FiringRow | undefined;
  return r ? toFiring(r) : null;
}

/** Newest first (ids are uuidv7), `before` the previous page's last id. */
export async function listFirings(db: DB, routine: string, before: string | undefined, limit: number): Promise<FiringRecord[]> {
  const rows = before
    ? await stmt(db, `SELECT ${FIRING_COLUMNS} FROM routine_firings WHERE routine = ? AND id < ? ORDER BY id DESC LIMIT ?`).all(routine, before, limit)
    : await stmt(db, `SELECT ${FIRING_COLUMNS} FROM routine_firings WHERE routine = ? ORDER BY id DESC LIMIT ?`).all(routine, limit);
  return (rows as FiringRow[]).map(toFiring);
}

/** The newest `n` firings of every routine, in one statement (an index seek per routine). */
export async function latestFirings(db: DB, n: number): Promise<FiringRecord[]> {
  return (
    (await stmt(
      db,
      `SELECT ${FIRING_COLUMNS} FROM routine_firings f
       WHERE f.id >= COALESCE((SELECT g.id FROM routine_firings g WHERE g.routine = f.routine ORDER BY g.id DESC LIMIT 1 OFFSET ${n - 1}), '')
       ORDER BY f.routine, f.id DESC`,
    ).all()) as FiringRow[]
  ).map(toFiring);
}

/** The routine's newest firing that created work, if any. */
export async function lastFired(db: DB, routine: string): Promise<FiringRecord | null> {
  const r = (await stmt(db, `SELECT ${FIRING_COLUMNS} FROM routine_firings WHERE routine = ? AND status = 'fired' ORDER BY id DESC LIMIT 1`).get(routine)) as FiringRow | undefined;
  return r ? toFiring(r) : null;
}

/** Queued firings of a routine, oldest first. */
export async function queuedFirings(db: DB, routine: string): Promise<FiringRecord[]> {
  return ((await stmt(db, `SELECT ${FIRING_COLUMNS} FROM routine_firings WHERE routine = ? AND status = 'queued' ORDER BY id`).all(routine)) as FiringRow[]).map(toFiring);
}

/** Routines with firings waiting. */
export async function routinesWithQueued(db: DB): Promise<string[]> {
  return ((await stmt(db, "SELECT DISTINCT routine FROM routine_firings WHERE status = 'queued'").all()) as { routine: string }[]).map((r) => r.routine);
}

/** Keeps the routine's newest `keep` firings (and every queued one). */
export async function pruneFirings(db: DB, routine: string, keep: number): Promise<void> {
  await stmt(
    db,
    `DELETE FROM routine_firings WHERE routine = ? AND status <> 'queued'
       AND id <= (SELECT id FROM routine_firings WHERE routine = ? ORDER BY id DESC LIMIT 1 OFFSET ${keep})`,
  ).run(routine, routine);
}

// What firings created.

export async function insertWork(db: DB, ids: string[], routine: string, chain: string[], now: string): Promise<void> {
  const s = stmt(db, 'INSERT INTO routine_work (work_id, routine, chain, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (work_id) DO NOTHING');
  for (const id of ids) await s.run(id, routine, JSON.stringify(chain), now);
}

/** The chain of routines that created a task or mission, or null when no firing did. */
export async function chainOf(db: DB, workId: string): Promise<string[] | null> {
  const r = (await stmt(db, 'SELECT chain FROM routine_work WHERE work_id = ?').get(workId)) as { chain: string } | undefined;
  return r ? (JSON.parse(r.chain) as string[]) : null;
}

/** Forgets the oldest work records, created before `olderThan`, at most `limit`. */
export async function pruneWork(db: DB, olderThan: string, limit: number): Promise<number> {
  return (await stmt(db, 'DELETE FROM routine_work WHERE work_id IN (SELECT work_id FROM routine_work WHERE created_at < ? ORDER BY created_at LIMIT ?)').run(olderThan, limit)).changes;
}
