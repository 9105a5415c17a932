import { stmt, type DB } from '../../db/open.js';
import type { TaskState } from '../tasks/state.js';
import type { Approval, ApprovalStatus, TimeoutAction } from './schema.js';

interface Row {
  id: string;
  task_id: string | null;
  mission_id: string | null;
  requested_by: string;
  title: string;
  reason: string | null;
  payload: string | null;
  status: ApprovalStatus;
  timeout_action: TimeoutAction | null;
  expires_at: string | null;
  task_from: TaskState | null;
  note: string | null;
  feedback: string | null;
  resolved_by: string | null;
  resolved_at: string | null;
  timed_out: number;
  created_at: string;
  updated_at: string;
}

const COLUMNS =
  'id, task_id, mission_id, requested_by, title, reason, payload, status, timeout_action, expires_at, task_from, note, feedback, resolved_by, resolved_at, timed_out, created_at, updated_at';

function toApproval(r: Row): Approval {
  return {
    id: r.id,
    taskId: r.task_id,
    missionId: r.mission_id,
    requestedBy: r.requested_by,
    title: r.title,
    reason: r.reason,
    payload: r.payload === null ? null : JSON.parse(r.payload),
    status: r.status,
    timeoutAction: r.timeout_action,
    expiresAt: r.expires_at,
    taskFrom: r.task_from,
    note: r.note,
    feedback: r.feedback,
    resolvedBy: r.resolved_by,
    resolvedAt: r.resolved_at,
    timedOut: r.timed_out === 1,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export function getApproval(db: DB, id: string): Approval | null {
  const r = stmt(db, `SELECT ${COLUMNS} FROM approvals WHERE id = ?`).get(id) as Row | undefined;
  return r ? toApproval(r) : null;
}

export interface ListFilter {
  status?: ApprovalStatus;
  taskId?: string;
  /** Only ids below this one (the previous page's last id). */
  before?: string;
  limit: number;
}

/** Newest first by id (uuidv7); each filter is served by an index on (column, id). */
export function listApprovals(db: DB, f: ListFilter): Approval[] {
  const conditions: [string, unknown][] = [
    ['status = ?', f.status],
    ['task_id = ?', f.taskId],
    ['id < ?', f.before],
  ];
  const used = conditions.filter(([, v]) => v !== undefined);
  const where = used.length ? 'WHERE ' + used.map(([c]) => c).join(' AND ') : '';
  const rows = stmt(db, `SELECT ${COLUMNS} FROM approvals ${where} ORDER BY id DESC LIMIT ?`).all(...used.map(([, v]) => v), f.limit) as Row[];
  return rows.map(toApproval);
}

/** The pending approval of a task, if any (a task waits on one request at a time). */
export function pendingForTask(db: DB, taskId: string): string | null {
  const r = stmt(db, "SELECT id FROM approvals WHERE task_id = ? AND status = 'pending' LIMIT 1").get(taskId) as { id: string } | undefined;
  return r?.id ?? null;
}

export interface NewApproval {
  id: string;
  taskId: string | null;
  missionId: string | null;
  requestedBy: string;
  title: string;
  reason: string | null;
  payload: string | null;
  timeoutAction: TimeoutAction | null;
  expiresAt: string | null;
  taskFrom: TaskState | null;
  now: string;
}

export function insertApproval(db: DB, a: NewApproval): void {
  stmt(
    db,
    `INSERT INTO approvals (id, task_id, mission_id, requested_by, title, reason, payload, status, timeout_action, expires_at, task_from, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)`,
  ).run(a.id, a.taskId, a.missionId, a.requestedBy, a.title, a.reason, a.payload, a.timeoutAction, a.expiresAt, a.taskFrom, a.now, a.now);
}

export interface Resolution {
  status: Exclude<ApprovalStatus, 'pending'>;
  note: string | null;
  feedback: string | null;
  resolvedBy: string | null;
  timedOut: boolean;
  now: string;
}

/** Compare-and-set from pending: false when someone else decided first. */
export function resolveApproval(db: DB, id: string, r: Resolution): boolean {
  return (
    stmt(
      db,
      `UPDATE approvals SET status = ?, note = ?, feedback = ?, resolved_by = ?, resolved_at = ?, timed_out = ?, updated_at = ?
       WHERE id = ? AND status = 'pending'`,
    ).run(r.status, r.note, r.feedback, r.resolvedBy, r.now, r.timedOut ? 1 : 0, r.now, id).changes === 1
  );
}

export interface Expiring {
  id: string;
  expiresAt: string;
}

/**
 * What the timeout scheduler needs: every pending approval expired by `cutoff`, plus the first one
 * still to come (to know when to wake). Both read the (status, expires_at) index in order.
 */
export function expiringApprovals(db: DB, cutoff: string): Expiring[] {
  const due = stmt(
    db,
    "SELECT id, expires_at AS expiresAt FROM approvals WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at",
  ).all(cutoff) as Expiring[];
  const next = stmt(db, "SELECT id, expires_at AS expiresAt FROM approvals WHERE status = 'pending' AND expires_at > ? ORDER BY expires_at LIMIT 1").get(cutoff) as
    | Expiring
    | undefined;
  return next ? [...due, next] : due;
}

/** The feedback of the task's latest rejected approval, or null. */
export function latestFeedback(db: DB, taskId: string): string | null {
  const r = stmt(db, "SELECT feedback FROM approvals WHERE task_id = ? AND status = 'rejected' AND feedback IS NOT NULL ORDER BY id DESC LIMIT 1").get(taskId) as
    | { feedback: string }
    | undefined;
  return r?.feedback ?? null;
}
