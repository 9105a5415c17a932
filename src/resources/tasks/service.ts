import type { App } from '../../app.js';
import { lockKey } from '../../db/open.js';
import { toPage, type Page } from '../common.js';
import { AppError, unprocessableField } from '../../kernel/errors.js';
import { uuidv7 } from '../../lib/ids.js';
import { nowIso } from '../../lib/time.js';
import { agentExists } from '../agents/service.js';
import { DEFAULT_MAX_RETRIES, PRIORITIES, type Claimed, type Lease, type Task, type TaskInput, type TaskListFilter, type TaskPatchInput } from './schema.js';
import { checkTransition, type TaskState } from './state.js';
import * as store from './store.js';
import { TASK_HOOKS, type RemovalCause } from './hooks.js';

export type { TaskTransition } from './hooks.js';

const hooksOf = (app: App) => app.services.get(TASK_HOOKS);

export async function getTask(app: App, id: string): Promise<Task | null> {
  return await store.getTask(app.db, id);
}

export async function requireTask(app: App, id: string): Promise<Task> {
  // In a write: what the caller checks and then writes stays as read until it commits (lockKey).
  await lockKey(app.db, 'task', id);
  const task = await store.getTask(app.db, id);
  if (!task) throw new AppError('not_found', `Task "${id}" not found.`);
  return task;
}

/**
 * requireTask for a route: on a PostgreSQL state the daemon serves other requests while the read
 * waits. One step after the statement's promise, no async function around it (the read hot path).
 */
export function readTask(app: App, id: string): Promise<Task> {
  return store.getTask(app.db, id).then((task) => {
    if (!task) throw new AppError('not_found', `Task "${id}" not found.`);
    return task;
  });
}

const listFilter = (q: TaskListFilter): store.ListFilter => ({ status: q.status, assignTo: q.assignTo, missionId: q.missionId, before: q.cursor, limit: q.limit + 1 });

export async function listTasks(app: App, q: TaskListFilter): Promise<Page<Task>> {
  return toPage(await store.listTasks(app.db, listFilter(q)), q.limit, (t) => t.id);
}

/** listTasks for a route, as readTask. */
export async function readTaskPage(app: App, q: TaskListFilter): Promise<Page<Task>> {
  return toPage(await store.readTasks(app.db, listFilter(q)), q.limit, (t) => t.id);
}

export const listMissionTasks = async (app: App, missionId: string): Promise<Task[]> => await store.listMissionTasks(app.db, missionId);

/** The id of the mission's task with this exact title, or null. */
export const findMissionTaskByTitle = async (app: App, missionId: string, title: string): Promise<string | null> => await store.missionTaskByTitle(app.db, missionId, title);

async function checkAssignee(app: App, agent: string | null | undefined, path = 'body.assignTo'): Promise<void> {
  if (agent && !(await agentExists(app.db, agent))) throw unprocessableField(path, `agent "${agent}" does not exist`);
}

/** Dependencies must name existing tasks, not the task itself, and form no cycle. */
async function checkDependencies(app: App, taskId: string | null, deps: string[]): Promise<void> {
  const missing = await store.missingTaskIds(app.db, deps);
  if (missing.length) throw unprocessableField('body.dependsOn', `no such task: ${missing.join(', ')}`);
  if (taskId === null) return;
  if (deps.includes(taskId)) throw unprocessableField('body.dependsOn', 'a task cannot depend on itself');
  if (await store.dependsTransitively(app.db, deps, taskId)) throw unprocessableField('body.dependsOn', 'this would form a dependency cycle');
}

const unique = <T>(xs: T[]): T[] => [...new Set(xs)];

export async function createTask(app: App, input: TaskInput): Promise<Task> {
  return await app.events.write(async () => {
    const dependsOn = unique(input.dependsOn ?? []);
    await checkAssignee(app, input.assignTo);
    await checkDependencies(app, null, dependsOn);
    const id = uuidv7();
    let status: TaskState = input.draft ? 'draft' : 'pending';
    for (const hook of hooksOf(app).createHooks) status = (await hook(app, input, status)) ?? status;
    const task = await store.insertTask(app.db, {
      id,
      title: input.title,
      description: input.description ?? null,
      assignTo: input.assignTo ?? null,
      missionId: input.missionId ?? null,
      status,
      priority: input.priority ?? 'normal',
      labels: unique(input.labels ?? []),
      maxRetries: input.maxRetries ?? DEFAULT_MAX_RETRIES,
      sideEffects: input.sideEffects ?? false,
      now: nowIso(app.clock),
    });
    if (dependsOn.length) {
      await store.replaceDependencies(app.db, id, dependsOn); // a new task has none to replace
      task.dependsOn = dependsOn; // in the order stored (position)
    }
    app.events.emit('task:created', { taskId: id, title: input.title, status, assignTo: input.assignTo ?? null, missionId: input.missionId ?? null });
    // The row as inserted: the event's sinks (webhook deliveries, attention) never change a task.
    return task;
  });
}

export async function updateTask(app: App, id: string, patch: TaskPatchInput): Promise<Task> {
  return await app.events.write(async () => {
    const task = await requireTask(app, id);
    const fields = Object.keys(patch).filter((k) => patch[k as keyof TaskPatchInput] !== undefined);
    if (!fields.length) return task;
    const next: Task = {
      ...task,
      title: patch.title ?? task.title,
      description: patch.description === undefined ? task.description : patch.description,
      assignTo: patch.assignTo === undefined ? task.assignTo : patch.assignTo,
      priority: patch.priority ?? task.priority,
      labels: patch.labels === undefined ? task.labels : unique(patch.labels ?? []),
      maxRetries: patch.maxRetries ?? task.maxRetries,
      sideEffects: patch.sideEffects ?? task.sideEffects,
    };
    if (patch.assignTo) await checkAssignee(app, patch.assignTo);
    if (patch.dependsOn !== undefined) {
      const deps = unique(patch.dependsOn ?? []);
      await checkDependencies(app, id, deps);
      await store.replaceDependencies(app.db, id, deps);
    }
    await store.updateFields(app.db, next, nowIso(app.clock));
    app.events.emit('task:updated', { taskId: id, fields });
    return (await store.getTask(app.db, id))!;
  });
}

/**
 * Removes a task; tasks that depended on it lose that dependency (and hear of it). `cause` tells
 * removal listeners whether the task goes alone or with its mission.
 */
export async function removeTask(app: App, id: string, cause: RemovalCause = 'task'): Promise<void> {
  await app.events.write(async () => {
    const task = await requireTask(app, id);
    const dependents = await store.dependentsOf(app.db, id);
    await store.deleteTask(app.db, id);
    app.events.emit('task:removed', { taskId: id });
    const now = nowIso(app.clock);
    for (const d of dependents) {
      await store.touch(app.db, d, now);
      app.events.emit('task:updated', { taskId: d, fields: ['dependsOn'] });
    }
    for (const l of hooksOf(app).removalListeners) await l(app, task, cause);
  });
}

/** Takes a task out of its mission (the mission is being deleted without its tasks). */
export async function detachTaskFromMission(app: App, id: string): Promise<void> {
  await app.events.write(async () => {
    const task = await requireTask(app, id);
    if (task.missionId === null) return;
    await store.setMissionId(app.db, id, null, nowIso(app.clock));
    app.events.emit('task:updated', { taskId: id, fields: ['missionId'] });
  });
}

export interface TransitionOptions {
  reason?: string;
  /** Refuse with 409 conflict unless the task is in this state (optimistic concurrency). */
  expectedFrom?: TaskState;
  /** Any JSON value to store as the result; only with to = review, done or failed. */
  result?: unknown;
  /** Feedback appended to the description, counting one revision (for rejected approvals). */
  revision?: string;
  /** The caller's claim lease: refused (409) unless it is the task's current, unexpired lease. */
  leaseId?: string;
}

const RESULT_STATES: TaskState[] = ['review', 'done', 'failed'];

/** One checked step of the state machine, with its event and listeners. Call inside write(). */
async function step(app: App, task: Task, to: TaskState, o: TransitionOptions): Promise<Task> {
  const from = task.status;
  const check = checkTransition(from, to, {
    openDependencies: to === 'in_progress' ? await store.openDependencies(app.db, task.id) : [],
    retries: task.retries,
    maxRetries: task.maxRetries,
    requireReview: app.config().tasks.requireReview,
  });
  if (!check.ok) throw new AppError(check.code, `Task ${task.id}: ${check.reason}`);
  const hooks = hooksOf(app);
  for (const g of hooks.transitionGuards) await g(app, task, to);
  const changed = await store.setStatus(app.db, task.id, from, to, {
    retry: check.retry,
    result: o.result === undefined ? undefined : JSON.stringify(o.result),
    revision: o.revision,
    now: nowIso(app.clock),
  });
  // Only reachable if something wrote the row outside this transaction's view.
  if (!changed) throw new AppError('conflict', `Task ${task.id} changed state while moving from ${from} to ${to}; read it and try again.`);
  app.events.emit('task:transition', o.reason === undefined ? { taskId: task.id, from, to } : { taskId: task.id, from, to, reason: o.reason });
  const after = (await store.getTask(app.db, task.id))!;
  for (const l of hooks.transitionListeners) await l(app, { task: after, from, to, reason: o.reason });
  return after;
}

export async function transitionTask(app: App, id: string, to: TaskState, o: TransitionOptions = {}): Promise<Task> {
  return await app.events.write(async () => {
    const task = await requireTask(app, id);
    if (o.expectedFrom !== undefined && task.status !== o.expectedFrom) {
      throw new AppError('conflict', `Task ${id} is ${task.status}, not ${o.expectedFrom} as expected; it was not moved to ${to}.`);
    }
    if (o.leaseId !== undefined) await currentLease(app, id, o.leaseId, app.clock.now());
    if (o.result !== undefined && !RESULT_STATES.includes(to)) {
      throw new AppError('invalid_request', `result can only be set when moving to ${RESULT_STATES.join(', ')}.`, {
        details: [{ path: 'body.result', message: `only allowed with to = ${RESULT_STATES.join(' | ')}` }],
      });
    }
    return await step(app, task, to, o);
  });
}

/**
 * An agent takes a task and starts it, atomically: pending → assigned → in_progress (two legal
 * moves, two task:transition events) or assigned → in_progress. The check and the writes share one
 * synchronous SQLite transaction, so of two concurrent claims exactly one sees a claimable task.
 */
export async function claimTask(app: App, id: string, agent: string): Promise<Claimed> {
  return await app.events.write(async () => {
    let task = await requireTask(app, id);
    await checkAssignee(app, agent, 'body.agent');
    if (task.assignTo !== null && task.assignTo !== agent) {
      throw new AppError('conflict', `Task ${id} is held by agent "${task.assignTo}" (${task.status}); "${agent}" cannot claim it.`);
    }
    if (task.status !== 'pending' && task.status !== 'assigned') {
      throw new AppError('conflict', `Task ${id} is ${task.status}; only pending or assigned tasks can be claimed.`);
    }
    if (task.assignTo !== agent) {
      await store.setAssignee(app.db, id, agent, nowIso(app.clock));
      task = { ...task, assignTo: agent };
    }
    const reason = `claimed by ${agent}`;
    if (task.status === 'pending') task = await step(app, task, 'assigned', { reason });
    task = await step(app, task, 'in_progress', { reason });
    // The claim is a lease: it lapses unless the holder sends heartbeats (see expireLease).
    const leaseId = uuidv7();
    const leaseExpiresAt = new Date(app.clock.now() + app.config().tasks.leaseSeconds * 1000).toISOString();
    await store.setLease(app.db, id, leaseId, leaseExpiresAt);
    app.events.emit('task:claimed', { taskId: id, agent });
    return { ...task, leaseExpiresAt, leaseId };
  });
}

/** Candidates are read this many at a time... */
const NEXT_BATCH = 20;
/** ...and at most this many are tried in all, so one call stays bounded on a board of refusals. */
const NEXT_MAX_TRIED = 1000;

/**
 * Claims the task an agent should do next, or returns null when none is ready for it: the most
 * urgent priority first; within a priority, assigned tasks before pending ones, then the oldest.
 * A candidate another rule refuses (a paused mission) is skipped, not fatal. One transaction, the
 * candidate's row locked, so two agents asking at once never get the same task.
 */
export async function nextTask(app: App, agent: string): Promise<Claimed | null> {
  return await app.events.write(async () => {
    await checkAssignee(app, agent, 'body.agent');
    let tried = 0;
    for (const priority of [...PRIORITIES].reverse()) {
      for (const status of ['assigned', 'pending'] as const) {
        let after = '';
        // On PostgreSQL each candidate read is locked (SKIP LOCKED): one at a time, so that an
        // agent asking at the same moment is passed the next one rather than none.
        const size = app.db.dialect === 'postgres' ? 1 : NEXT_BATCH;
        for (;;) {
          const batch = await store.claimableTasks(app.db, status, priority, agent, after, size);
          for (const id of batch) {
            try {
              return await claimTask(app, id, agent);
            } catch (err) {
              if (!(err instanceof AppError)) throw err;
              if (++tried >= NEXT_MAX_TRIED) return null;
            }
          }
          if (batch.length < size) break;
          after = batch[batch.length - 1]!;
        }
      }
    }
    return null;
  });
}

/** The task's lease if it is `leaseId` and has not run out at `now`; else 409 saying which. */
async function currentLease(app: App, id: string, leaseId: string, now: number): Promise<store.LeaseRow> {
  const lease = await store.getLease(app.db, id);
  if (!lease || lease.leaseId !== leaseId) {
    throw new AppError('conflict', `Lease ${leaseId} is not the current lease of task ${id}: it expired or the task was released; claim the task again.`);
  }
  if (Date.parse(lease.expiresAt) <= now) {
    throw new AppError('conflict', `Lease ${leaseId} of task ${id} expired at ${lease.expiresAt}; the task is being released, claim it again.`);
  }
  return lease;
}

/**
 * The holder says it is still working: the lease runs `tasks.leaseSeconds` from now. No event: a
 * heartbeat changes no state anyone acts on, and one every few seconds per agent would drown the
 * stream; the new expiry shows in the task's leaseExpiresAt.
 */
export async function heartbeatTask(app: App, id: string, leaseId: string): Promise<Lease> {
  return await app.events.write(async () => {
    await requireTask(app, id);
    const now = app.clock.now();
    const lease = await currentLease(app, id, leaseId, now);
    const leaseExpiresAt = new Date(now + app.config().tasks.leaseSeconds * 1000).toISOString();
    if (!(await store.extendLease(app.db, id, leaseId, leaseExpiresAt))) throw new AppError('conflict', `Lease ${leaseId} of task ${id} changed; claim the task again.`);
    return { taskId: id, agent: lease.agent, leaseId, leaseExpiresAt };
  });
}

/** Leases run out by `now` (the reaper's candidates), plus the next to run out. */
export const expiringLeases = async (app: App, now: number) => await store.expiringLeases(app.db, new Date(now).toISOString(), 100);

/**
 * Releases a task whose lease ran out at `now`: in_progress → pending with no assignee, so any
 * agent may claim it (its holder is presumed dead; returning it to the same agent would keep it
 * stuck). task:transition and task:lease_expired are written in the release's transaction.
 * Returns null when there was nothing to release (a heartbeat or a transition came first).
 */
export async function expireLease(app: App, id: string, now: number): Promise<{ taskId: string; agent: string | null } | null> {
  return await app.events.write(async () => {
    const lease = await store.getLease(app.db, id);
    if (!lease || Date.parse(lease.expiresAt) > now) return null;
    const task = await requireTask(app, id);
    if (!(await store.releaseLease(app.db, id, lease.leaseId, nowIso(app.clock)))) return null;
    const reason = 'lease expired';
    app.events.emit('task:transition', { taskId: id, from: task.status, to: 'pending', reason });
    app.events.emit('task:lease_expired', { taskId: id, agent: lease.agent, leaseId: lease.leaseId, expiredAt: lease.expiresAt });
    const after = (await store.getTask(app.db, id))!;
    for (const l of hooksOf(app).transitionListeners) await l(app, { task: after, from: task.status, to: 'pending', reason });
    return { taskId: id, agent: lease.agent };
  });
}

/**
 * A run lets go of the task it claimed without finishing it (cancelled, or lost with its daemon):
 * in_progress → assigned, the agent kept as assignee, the lease gone. Like a lease running out, this
 * is a release rather than a move of the state machine; task:transition says so with its reason.
 * Returns false when the lease is no longer the task's (something else moved it meanwhile).
 */
export async function releaseClaim(app: App, id: string, leaseId: string, reason: string): Promise<boolean> {
  return await app.events.write(async () => {
    const task = await store.getTask(app.db, id);
    if (task?.status !== 'in_progress') return false;
    if (!(await store.releaseToAssigned(app.db, id, leaseId, nowIso(app.clock)))) return false;
    app.events.emit('task:transition', { taskId: id, from: 'in_progress', to: 'assigned', reason });
    const after = (await store.getTask(app.db, id))!;
    for (const l of hooksOf(app).transitionListeners) await l(app, { task: after, from: 'in_progress', to: 'assigned', reason });
    return true;
  });
}

/** Tasks an agent could start now (pending or assigned to it, dependencies done), oldest first. */
export const readyTasksOf = async (app: App, agent: string, limit: number): Promise<string[]> => await store.readyTasksOf(app.db, agent, limit);

/** Ids of the task's dependencies that are not done yet. */
export const openDependenciesOf = async (app: App, id: string): Promise<string[]> => await store.openDependencies(app.db, id);

/** Ids of the tasks that depend on this one. */
export const dependentsOf = async (app: App, id: string): Promise<string[]> => await store.dependentsOf(app.db, id);

/** failed → pending, counting one retry; refused (409) once maxRetries are used. */
export async function retryTask(app: App, id: string): Promise<Task> {
  return await app.events.write(async () => {
    const task = await requireTask(app, id);
    if (task.status !== 'failed') {
      throw new AppError('invalid_transition', `Task ${id} is ${task.status}: only a failed task can be retried (failed → pending), not ${task.status} → pending.`);
    }
    return await step(app, task, 'pending', { reason: 'retry' });
  });
}
