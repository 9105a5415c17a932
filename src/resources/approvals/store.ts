import { stmt, type DB } from '../../db/open.js';
import type { TaskState } from '../tasks/state.js';
import type { Approval, ApprovalKind, ApprovalStatus, TimeoutAction } from './schema.js';

interface Row {
  id: string;
  kind: ApprovalKind;
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
  run_id: string | null;
  agent: string | null;
  tool: string | null;
  allowed_tool: string | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS =
  'id, kind, task_id, mission_id, requested_by, title, reason, payload, status, timeout_action, expires_at, task_from, note, feedback, resolved_by, resolved_at, timed_out, run_id, agent, tool, allowed_tool, created_at, updated_at';

function toApproval(r: Row): Approval {
  return {
    id: r.id,
    kind: r.kind,
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
    runId: r.run_id,
    agent: r.agent,
    tool: r.tool,
    alwaysAllowed: r.allowed_tool,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export async function getApproval(db: DB, id: string): Promise<Approval | null> {
  const r = (await stmt(db, `SELECT ${COLUMNS} FROM approvals WHERE id = ?`).get(id)) as Row | undefined;
  return r ? toApproval(r) : null;
}

export interface ListFilter {
  status?: ApprovalStatus;
  taskId?: string;
  kind?: ApprovalKind;
  runId?: string;
  /** Only ids below this one (the previous page's last id). */
  before?: string;
  limit: number;
}

/** Newest first by id (uuidv7); each filter but kind is served by an index on (column, id). */
export async function listApprovals(db: DB, f: ListFilter): Promise<Approval[]> {
  const conditions: [string, unknown][] = [
    ['status = ?', f.status],
    ['task_id = ?', f.taskId],
    ['kind = ?', f.kind],
    ['run_id = ?', f.runId],
    ['id < ?', f.before],
  ];
  const used = conditions.filter(([, v]) => v !== undefined);
  const where = used.length ? 'WHERE ' + used.map(([c]) => c).join(' AND ') : '';
  const rows = (await stmt(db, `SELECT ${COLUMNS} FROM approvals ${where} ORDER BY id DESC LIMIT ?`).all(...used.map(([, v]) => v), f.limit)) as Row[];
  return rows.map(toApproval);
}

/** The pending gate of a task, if any (a task waits on one request at a time; permission requests do not gate it). */
export async function pendingForTask(db: DB, taskId: string): Promise<string | null> {
  const r = (await stmt(db, "SELECT id FROM approvals WHERE task_id = ? AND status = 'pending' AND kind = 'task' LIMIT 1").get(taskId)) as { id: string } | undefined;
  return r?.id ?? null;
}

/**
 * The permission request a CLI's ask finds again (the same agent, tool and input in the same
 * task): the latest one still pending, or decided with no CLI told yet. Null: a new request.
 */
export async function openAsk(db: DB, taskId: string, askKey: string): Promise<Approval | null> {
  const r = (await stmt(db, `SELECT ${COLUMNS} FROM approvals WHERE task_id = ? AND ask_key = ? AND (status = 'pending' OR answered_at IS NULL) ORDER BY id DESC LIMIT 1`).get(taskId, askKey)) as
    | Row
    | undefined;
  return r ? toApproval(r) : null;
}

/** A CLI was given the decision: the next such ask is a new request. */
export async function markAnswered(db: DB, id: string, now: string): Promise<void> {
  await stmt(db, 'UPDATE approvals SET answered_at = ? WHERE id = ? AND answered_at IS NULL').run(now, id);
}

/** A pending request found again by another run's CLI (the run that was lost, queued again): it follows that run. */
export async function moveAsk(db: DB, id: string, runId: string, now: string): Promise<void> {
  await stmt(db, "UPDATE approvals SET run_id = ?, updated_at = ? WHERE id = ? AND status = 'pending'").run(runId, now, id);
}

/** The permission requests of a task still waiting for a decision (the task's runs asked them). */
export async function pendingPermissionsOfTask(db: DB, taskId: string): Promise<string[]> {
  return ((await stmt(db, "SELECT id FROM approvals WHERE task_id = ? AND kind = 'permission' AND status = 'pending' ORDER BY id LIMIT 1000").all(taskId)) as { id: string }[]).map((r) => r.id);
}

export interface NewApproval {
  id: string;
  kind: ApprovalKind;
  taskId: string | null;
  missionId: string | null;
  requestedBy: string;
  title: string;
  reason: string | null;
  payload: string | null;
  timeoutAction: TimeoutAction | null;
  expiresAt: string | null;
  taskFrom: TaskState | null;
  /** A permission request's run, agent, tool and ask digest (null for a task gate). */
  runId: string | null;
  agent: string | null;
  tool: string | null;
  askKey: string | null;
  now: string;
}

export async function insertApproval(db: DB, a: NewApproval): Promise<void> {
  await stmt(
    db,
    `INSERT INTO approvals (id, kind, task_id, mission_id, requested_by, title, reason, payload, status, timeout_action, expires_at, task_from, run_id, agent, tool, ask_key, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(a.id, a.kind, a.taskId, a.missionId, a.requestedBy, a.title, a.reason, a.payload, a.timeoutAction, a.expiresAt, a.taskFrom, a.runId, a.agent, a.tool, a.askKey, a.now, a.now);
}

export interface Resolution {
  status: Exclude<ApprovalStatus, 'pending'>;
  note: string | null;
  feedback: string | null;
  resolvedBy: string | null;
  timedOut: boolean;
  /** The tool an "always allow" approval added to the agent's allowedTools. */
  allowedTool: string | null;
  now: string;
}

/** Compare-and-set from pending: false when someone else decided first. */
export async function resolveApproval(db: DB, id: string, r: Resolution): Promise<boolean> {
  return (
    (
      await stmt(
        db,
        `UPDATE approvals SET status = ?, note = ?, feedback = ?, resolved_by = ?, resolved_at = ?, timed_out = ?, allowed_tool = ?, updated_at = ?
       WHERE id = ? AND status = 'pending'`,
      ).run(r.status, r.note, r.feedback, r.resolvedBy, r.now, r.timedOut ? 1 : 0, r.allowedTool, r.now, id)
    ).changes === 1
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
export async function expiringApprovals(db: DB, cutoff: string): Promise<Expiring[]> {
  const due = (await stmt(db, "SELECT id, expires_at AS expiresAt FROM approvals WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at").all(
    cutoff,
  )) as Expiring[];
  const next = (await stmt(db, "SELECT id, expires_at AS expiresAt FROM approvals WHERE status = 'pending' AND expires_at > ? ORDER BY expires_at LIMIT 1").get(cutoff)) as Expiring | undefined;
  return next ? [...due, next] : due;
}

/** The feedback of the task's latest rejected gate (a refused permission is not review feedback), or null. */
export async function latestFeedback(db: DB, taskId: string): Promise<string | null> {
  const r = (await stmt(db, "SELECT feedback FROM approvals WHERE task_id = ? AND kind = 'task' AND status = 'rejected' AND feedback IS NOT NULL ORDER BY id DESC LIMIT 1").get(taskId)) as
    | { feedback: string }
    | undefined;
  return r?.feedback ?? null;
}
