import type { App } from '../../app.js';
import { lockKey } from '../../db/open.js';
import { toPage, type Page } from '../common.js';
import { AppError, unprocessableField } from '../../kernel/errors.js';
import { uuidv7 } from '../../lib/ids.js';
import { nowIso } from '../../lib/time.js';
import { allowTool, getAgent } from '../agents/service.js';
import { getMission } from '../missions/service.js';
import type { Task } from '../tasks/schema.js';
import type { TaskHooks } from '../tasks/hooks.js';
import { getTask, transitionTask } from '../tasks/service.js';
import type { TaskState } from '../tasks/state.js';
import type { Approval, ApprovalInput, ApprovalListFilter } from './schema.js';
import * as store from './store.js';

/** resolvedBy of a request decided by its timeout. */
export const TIMEOUT_RESOLVER = 'timeout';

export async function getApproval(app: App, id: string): Promise<Approval | null> {
  return await store.getApproval(app.db, id);
}

export async function requireApproval(app: App, id: string): Promise<Approval> {
  // In a write: what the caller checks and then writes stays as read until it commits (lockKey).
  await lockKey(app.db, 'approval', id);
  const a = await store.getApproval(app.db, id);
  if (!a) throw new AppError('not_found', `Approval "${id}" not found.`);
  return a;
}

export async function listApprovals(app: App, q: ApprovalListFilter): Promise<Page<Approval>> {
  const rows = await store.listApprovals(app.db, { status: q.status, taskId: q.taskId, kind: q.kind, runId: q.runId, before: q.cursor, limit: q.limit + 1 });
  return toPage(rows, q.limit, (a) => a.id);
}

/** Through the missions service (its only public read is the full mission, which throws not_found). */
async function missionExists(app: App, id: string): Promise<boolean> {
  try {
    await getMission(app, id);
    return true;
  } catch (err) {
    if (err instanceof AppError && err.code === 'not_found') return false;
    throw err;
  }
}

/**
 * Records a pending request and, when it names a task, moves the task to awaiting_approval in the
 * same transaction (task:transition fires; a task that cannot move there is 409 invalid_transition).
 */
export async function requestApproval(app: App, input: ApprovalInput): Promise<Approval> {
  return await app.events.write(async () => {
    const task = input.taskId === undefined ? null : await getTask(app, input.taskId);
    // A reference in the body, like an unknown assignTo on a task: 422, keeping 404 for paths.
    if (input.taskId !== undefined && !task) throw unprocessableField('body.taskId', `task "${input.taskId}" does not exist`);
    if (input.missionId !== undefined && !(await missionExists(app, input.missionId))) {
      throw unprocessableField('body.missionId', `mission "${input.missionId}" does not exist`);
    }
    if (task && input.missionId !== undefined && task.missionId !== null && task.missionId !== input.missionId) {
      throw unprocessableField('body.missionId', `task ${task.id} belongs to mission ${task.missionId}, not ${input.missionId}`);
    }
    if (task && task.status !== 'awaiting_approval') {
      // The guard below keeps a task with a pending request in awaiting_approval, but a database
      // from before that guard may hold such a task elsewhere: still one gate at a time.
      const waiting = await store.pendingForTask(app.db, task.id);
      if (waiting) throw new AppError('conflict', `Task ${task.id} already has pending approval ${waiting}; decide that one first.`);
    }
    const id = uuidv7();
    const now = nowIso(app.clock);
    const timeout = input.timeoutSeconds;
    await store.insertApproval(app.db, {
      id,
      kind: 'task',
      taskId: task?.id ?? null,
      missionId: input.missionId ?? task?.missionId ?? null,
      requestedBy: input.requestedBy,
      title: input.title,
      reason: input.reason ?? null,
      payload: input.payload === undefined ? null : JSON.stringify(input.payload),
      timeoutAction: timeout === undefined ? null : (input.timeoutAction ?? 'reject'),
      expiresAt: timeout === undefined ? null : new Date(Date.parse(now) + timeout * 1000).toISOString(),
      taskFrom: task?.status ?? null,
      runId: null,
      agent: null,
      tool: null,
      askKey: null,
      now,
    });
    app.events.emit('approval:requested', {
      approvalId: id,
      kind: 'task',
      taskId: task?.id ?? null,
      missionId: input.missionId ?? task?.missionId ?? null,
      title: input.title,
      requestedBy: input.requestedBy,
      runId: null,
      tool: null,
    });
    if (task) await transitionTask(app, task.id, 'awaiting_approval', { reason: `approval ${id} requested by ${input.requestedBy}`, expectedFrom: task.status });
    return (await store.getApproval(app.db, id))!;
  });
}

export interface Decision {
  status: 'approved' | 'rejected';
  note?: string;
  feedback?: string;
  resolvedBy: string | null;
  timedOut: boolean;
  /** A permission request approved "always": its tool joins the agent's allowedTools. */
  alwaysAllow?: boolean;
}

/** Where a decision sends the task: approve → assigned (done when requested from review); reject → pending. */
export function taskTarget(status: Decision['status'], taskFrom: TaskState | null): TaskState {
  if (status === 'rejected') return 'pending';
  return taskFrom === 'review' ? 'done' : 'assigned';
}

function revisionText(a: Approval, d: Decision): string {
  if (d.timedOut) return `Approval "${a.title}" timed out with no decision and was rejected automatically.`;
  return `Approval "${a.title}" rejected${d.resolvedBy ? ` by ${d.resolvedBy}` : ''}: ${d.feedback}`;
}

/**
 * Resolves a pending approval and, for a task gate, moves its task, in one transaction. The
 * approval is marked decided before the task moves, so the guard below lets the move through.
 * When the task is no longer awaiting approval (deleted, or moved by hand before that guard
 * existed) the decision is still recorded and the task is left as it is: the human's answer must
 * not be lost, and a timeout must not fail forever. A permission request moves nothing: its
 * task stays with the run that asked (the run hears the decision through approval:resolved).
 */
async function decide(app: App, a: Approval, d: Decision): Promise<Approval> {
  const now = nowIso(app.clock);
  const allowedTool = d.alwaysAllow && d.status === 'approved' ? await alwaysAllow(app, a) : null;
  const changed = await store.resolveApproval(app.db, a.id, {
    status: d.status,
    note: d.note ?? null,
    feedback: d.feedback ?? null,
    resolvedBy: d.resolvedBy,
    timedOut: d.timedOut,
    allowedTool,
    now,
  });
  if (!changed) throw alreadyDecided((await store.getApproval(app.db, a.id))!);
  app.events.emit('approval:resolved', {
    approvalId: a.id,
    kind: a.kind,
    taskId: a.taskId,
    runId: a.runId,
    status: d.status,
    resolvedBy: d.resolvedBy,
    timedOut: d.timedOut,
    alwaysAllowed: allowedTool,
  });
  if (a.taskId !== null && a.kind === 'task') {
    const task = await getTask(app, a.taskId);
    if (task?.status === 'awaiting_approval') {
      const verb = d.timedOut ? `timed out (${d.status})` : `${d.status}${d.resolvedBy ? ` by ${d.resolvedBy}` : ''}`;
      const reason = `approval ${a.id} ${verb}`;
      const max = app.config().tasks.maxRevisions;
      if (d.status === 'rejected' && task.revisionCount >= max) {
        // One revision too many: the task fails, saying why, instead of going round again.
        const error = `rejected after ${task.revisionCount} revision(s); tasks.maxRevisions is ${max}: ${d.timedOut ? 'the approval timed out' : d.feedback}`;
        await transitionTask(app, task.id, 'failed', { reason: `${reason}; tasks.maxRevisions (${max}) reached`, expectedFrom: 'awaiting_approval', result: { error, approvalId: a.id } });
      } else {
        await transitionTask(app, task.id, taskTarget(d.status, a.taskFrom), {
          reason,
          expectedFrom: 'awaiting_approval',
          revision: d.status === 'rejected' ? revisionText(a, d) : undefined,
        });
      }
    } else {
      app.log.info('approval resolved; its task was not awaiting approval and is left as it is', {
        approvalId: a.id,
        taskId: a.taskId,
        taskStatus: task?.status ?? null,
      });
    }
  }
  return (await store.getApproval(app.db, a.id))!;
}

/** "Always allow": the request's tool joins its agent's allowedTools (inside decide's transaction). */
async function alwaysAllow(app: App, a: Approval): Promise<string> {
  if (a.kind !== 'permission' || a.agent === null || a.tool === null) {
    throw unprocessableField('body.alwaysAllow', `approval ${a.id} gates a task; only a permission request of a run can allow its tool for good`);
  }
  if (!(await getAgent(app.db, a.agent))) throw unprocessableField('body.alwaysAllow', `agent "${a.agent}" no longer exists; approve without alwaysAllow`);
  await allowTool(app, a.agent, a.tool);
  return a.tool;
}

function alreadyDecided(a: Approval): AppError {
  return new AppError('conflict', `Approval ${a.id} was already ${a.status}${a.resolvedBy ? ` by ${a.resolvedBy}` : ''} at ${a.resolvedAt}; it cannot be decided again.`);
}

/**
 * A person's decision that comes at or after the request's expiresAt is too late, even when the
 * timer has not run yet (a busy daemon): the timeout decides first, in its own transaction, and the
 * person is told it was already decided (409), as a lease past its end is dead before the reaper
 * gets to it. A timeout that cannot decide (a mission rule refuses its move) lets the person's
 * decision through; its timer tries again later as ever.
 */
async function lateDecisionLoses(app: App, id: string): Promise<void> {
  try {
    await resolveExpired(app, id, app.clock.now());
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
  }
}

export async function approve(app: App, id: string, o: { note?: string; resolvedBy: string | null; alwaysAllow?: boolean }): Promise<Approval> {
  await lateDecisionLoses(app, id);
  return await app.events.write(async () => {
    const a = await requireApproval(app, id);
    if (a.status !== 'pending') throw alreadyDecided(a);
    return await decide(app, a, { status: 'approved', note: o.note, resolvedBy: o.resolvedBy, timedOut: false, alwaysAllow: o.alwaysAllow });
  });
}

export async function reject(app: App, id: string, o: { feedback: string; resolvedBy: string | null }): Promise<Approval> {
  await lateDecisionLoses(app, id);
  return await app.events.write(async () => {
    const a = await requireApproval(app, id);
    if (a.status !== 'pending') throw alreadyDecided(a);
    return await decide(app, a, { status: 'rejected', feedback: o.feedback, resolvedBy: o.resolvedBy, timedOut: false });
  });
}

/**
 * Decides an approval by its timeoutAction if it is still pending and expired at `now`; returns
 * null (and changes nothing) otherwise, so a timer racing a human decision is harmless.
 */
export async function resolveExpired(app: App, id: string, now: number): Promise<Approval | null> {
  return await app.events.write(async () => {
    const a = await store.getApproval(app.db, id);
    if (a?.status !== 'pending' || a.expiresAt === null || Date.parse(a.expiresAt) > now) return null;
    const status = a.timeoutAction === 'approve' ? 'approved' : 'rejected';
    return await decide(app, a, { status, resolvedBy: TIMEOUT_RESOLVER, timedOut: true });
  });
}

/**
 * Decides a pending approval inside the caller's write (permissions.ts: a run that ended refuses
 * what it asked); null when it was no longer pending.
 */
export async function decidePending(app: App, id: string, d: Decision): Promise<Approval | null> {
  const a = await store.getApproval(app.db, id);
  if (a?.status !== 'pending') return null;
  return await decide(app, a, d);
}

/** Pending approvals expired by `now`, plus the next to expire (see store.expiringApprovals). */
export const expiringApprovals = async (app: App, now: number): Promise<store.Expiring[]> => await store.expiringApprovals(app.db, new Date(now).toISOString());

/**
 * The gate holds both ways. A task enters awaiting_approval only through an approval request,
 * which records the request before it moves the task: entered by hand, the task would wait for a
 * decision nobody can make. It leaves only through its approval's decision (a person's or the
 * timeout's), which marks the approval decided first: moved by hand, the request would stay
 * pending with nothing left to gate. Deleting the task is not a transition and stays allowed.
 */
async function guardTransition(app: App, task: Task, to: TaskState): Promise<void> {
  if (to === 'awaiting_approval') {
    if (await store.pendingForTask(app.db, task.id)) return;
    throw new AppError(
      'invalid_transition',
      `Task ${task.id} cannot move from ${task.status} to awaiting_approval by hand: a task enters awaiting_approval only through an approval request. ` +
        `Request one with POST /api/v1/approvals {"taskId": "${task.id}", "requestedBy", "title"}.`,
    );
  }
  if (task.status !== 'awaiting_approval') return;
  const waiting = await store.pendingForTask(app.db, task.id);
  if (waiting) throw new AppError('conflict', `Task ${task.id} is waiting for approval ${waiting}; approve or reject it instead of moving the task to ${to}.`);
}

/** Closes the approval gate on a daemon's tasks; the approvals' wire() calls it once per daemon. */
export function wireApprovals(hooks: TaskHooks): void {
  hooks.beforeTransition(guardTransition);
}

/** What the person who last sent the task back said (its latest rejected approval's feedback), or null. */
export const latestFeedback = async (app: App, taskId: string): Promise<string | null> => await store.latestFeedback(app.db, taskId);
