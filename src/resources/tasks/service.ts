import type { App } from '../../app.js';
import { toPage, type Page } from '../common.js';
import { AppError, unprocessableField } from '../../kernel/errors.js';
import { uuidv7 } from '../../lib/ids.js';
import { nowIso } from '../../lib/time.js';
import { agentExists } from '../agents/service.js';
import { DEFAULT_MAX_RETRIES, type Task, type TaskInput, type TaskListFilter, type TaskPatchInput } from './schema.js';
import { checkTransition, type TaskState } from './state.js';
import * as store from './store.js';

export interface TaskTransition {
  /** The task after the move. */
  task: Task;
  from: TaskState;
  to: TaskState;
  reason?: string;
}

export type TransitionListener = (app: App, change: TaskTransition) => void;

const listeners = new Set<TransitionListener>();

/**
 * Lets another resource (missions, approvals) react to every state change inside the transaction
 * that makes it: a listener may write and emit its own events, and a listener that throws rolls
 * the transition back.
 */
export function onTaskTransition(listener: TransitionListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Decides whether a legal move may happen now; throws an AppError to refuse it. */
export type TransitionGuard = (app: App, task: Task, to: TaskState) => void;

const guards = new Set<TransitionGuard>();

/**
 * Lets another resource veto a move the state machine allows (a paused mission's tasks may not
 * start). Guards run inside the transition's transaction, before anything is written.
 */
export function beforeTaskTransition(guard: TransitionGuard): () => void {
  guards.add(guard);
  return () => guards.delete(guard);
}

/**
 * Decides whether a task may be created as asked; throws an AppError to refuse it, or returns the
 * status to create it in instead of `status` (a draft mission's new tasks wait in draft).
 */
export type CreateHook = (app: App, input: TaskInput, status: TaskState) => TaskState | void;

const createHooks = new Set<CreateHook>();

/**
 * Lets another resource apply its rules to a new task (missions: the mission must exist and not be
 * over, titles are unique within it). Hooks run inside the creation's transaction, after the task's
 * own checks and before anything is written.
 */
export function beforeTaskCreate(hook: CreateHook): () => void {
  createHooks.add(hook);
  return () => createHooks.delete(hook);
}

export type RemovalListener = (app: App, removed: Task) => void;

const removalListeners = new Set<RemovalListener>();

/**
 * Lets another resource react to a task's removal (a mission whose last open task goes may now be
 * complete). Listeners run inside the removal's transaction, after the delete and its events, and
 * receive the task as it was; one that throws rolls the removal back.
 */
export function onTaskRemoved(listener: RemovalListener): () => void {
  removalListeners.add(listener);
  return () => removalListeners.delete(listener);
}

export function getTask(app: App, id: string): Task | null {
  return store.getTask(app.db, id);
}

export function requireTask(app: App, id: string): Task {
  const task = store.getTask(app.db, id);
  if (!task) throw new AppError('not_found', `Task "${id}" not found.`);
  return task;
}

export function listTasks(app: App, q: TaskListFilter): Page<Task> {
  const rows = store.listTasks(app.db, { status: q.status, assignTo: q.assignTo, missionId: q.missionId, before: q.cursor, limit: q.limit + 1 });
  return toPage(rows, q.limit, (t) => t.id);
}

export const listMissionTasks = (app: App, missionId: string): Task[] => store.listMissionTasks(app.db, missionId);

/** The id of the mission's task with this exact title, or null. */
export const findMissionTaskByTitle = (app: App, missionId: string, title: string): string | null => store.missionTaskByTitle(app.db, missionId, title);

function checkAssignee(app: App, agent: string | null | undefined, path = 'body.assignTo'): void {
  if (agent && !agentExists(app.db, agent)) throw unprocessableField(path, `agent "${agent}" does not exist`);
}

/** Dependencies must name existing tasks, not the task itself, and form no cycle. */
function checkDependencies(app: App, taskId: string | null, deps: string[]): void {
  const missing = store.missingTaskIds(app.db, deps);
  if (missing.length) throw unprocessableField('body.dependsOn', `no such task: ${missing.join(', ')}`);
  if (taskId === null) return;
  if (deps.includes(taskId)) throw unprocessableField('body.dependsOn', 'a task cannot depend on itself');
  if (store.dependsTransitively(app.db, deps, taskId)) throw unprocessableField('body.dependsOn', 'this would form a dependency cycle');
}

const unique = <T>(xs: T[]): T[] => [...new Set(xs)];

export function createTask(app: App, input: TaskInput): Task {
  return app.events.write(() => {
    const dependsOn = unique(input.dependsOn ?? []);
    checkAssignee(app, input.assignTo);
    checkDependencies(app, null, dependsOn);
    const id = uuidv7();
    let status: TaskState = input.draft ? 'draft' : 'pending';
    for (const hook of createHooks) status = hook(app, input, status) ?? status;
    store.insertTask(app.db, {
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
      now: nowIso(),
    });
    if (dependsOn.length) store.replaceDependencies(app.db, id, dependsOn); // a new task has none to replace
    app.events.emit('task:created', { taskId: id, title: input.title, status, assignTo: input.assignTo ?? null, missionId: input.missionId ?? null });
    return store.getTask(app.db, id)!;
  });
}

export function updateTask(app: App, id: string, patch: TaskPatchInput): Task {
  return app.events.write(() => {
    const task = requireTask(app, id);
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
    if (patch.assignTo) checkAssignee(app, patch.assignTo);
    if (patch.dependsOn !== undefined) {
      const deps = unique(patch.dependsOn ?? []);
      checkDependencies(app, id, deps);
      store.replaceDependencies(app.db, id, deps);
    }
    store.updateFields(app.db, next, nowIso());
    app.events.emit('task:updated', { taskId: id, fields });
    return store.getTask(app.db, id)!;
  });
}

/** Removes a task; tasks that depended on it lose that dependency (and hear of it). */
export function removeTask(app: App, id: string): void {
  app.events.write(() => {
    const task = requireTask(app, id);
    const dependents = store.dependentsOf(app.db, id);
    store.deleteTask(app.db, id);
    app.events.emit('task:removed', { taskId: id });
    const now = nowIso();
    for (const d of dependents) {
      store.touch(app.db, d, now);
      app.events.emit('task:updated', { taskId: d, fields: ['dependsOn'] });
    }
    for (const l of removalListeners) l(app, task);
  });
}

/** Takes a task out of its mission (the mission is being deleted without its tasks). */
export function detachTaskFromMission(app: App, id: string): void {
  app.events.write(() => {
    const task = requireTask(app, id);
    if (task.missionId === null) return;
    store.setMissionId(app.db, id, null, nowIso());
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
}

const RESULT_STATES: TaskState[] = ['review', 'done', 'failed'];

/** One checked step of the state machine, with its event and listeners. Call inside write(). */
function step(app: App, task: Task, to: TaskState, o: TransitionOptions): Task {
  const from = task.status;
  const check = checkTransition(from, to, {
    openDependencies: to === 'in_progress' ? store.openDependencies(app.db, task.id) : [],
    retries: task.retries,
    maxRetries: task.maxRetries,
  });
  if (!check.ok) throw new AppError(check.code, `Task ${task.id}: ${check.reason}`);
  for (const g of guards) g(app, task, to);
  const changed = store.setStatus(app.db, task.id, from, to, {
    retry: check.retry,
    result: o.result === undefined ? undefined : JSON.stringify(o.result),
    revision: o.revision,
    now: nowIso(),
  });
  // Only reachable if something wrote the row outside this transaction's view.
  if (!changed) throw new AppError('conflict', `Task ${task.id} changed state while moving from ${from} to ${to}; read it and try again.`);
  app.events.emit('task:transition', o.reason === undefined ? { taskId: task.id, from, to } : { taskId: task.id, from, to, reason: o.reason });
  const after = store.getTask(app.db, task.id)!;
  for (const l of listeners) l(app, { task: after, from, to, reason: o.reason });
  return after;
}

export function transitionTask(app: App, id: string, to: TaskState, o: TransitionOptions = {}): Task {
  return app.events.write(() => {
    const task = requireTask(app, id);
    if (o.expectedFrom !== undefined && task.status !== o.expectedFrom) {
      throw new AppError('conflict', `Task ${id} is ${task.status}, not ${o.expectedFrom} as expected; it was not moved to ${to}.`);
    }
    if (o.result !== undefined && !RESULT_STATES.includes(to)) {
      throw new AppError('invalid_request', `result can only be set when moving to ${RESULT_STATES.join(', ')}.`, {
        details: [{ path: 'body.result', message: `only allowed with to = ${RESULT_STATES.join(' | ')}` }],
      });
    }
    return step(app, task, to, o);
  });
}

/**
 * An agent takes a task and starts it, atomically: pending → assigned → in_progress (two legal
 * moves, two task:transition events) or assigned → in_progress. The check and the writes share one
 * synchronous SQLite transaction, so of two concurrent claims exactly one sees a claimable task.
 */
export function claimTask(app: App, id: string, agent: string): Task {
  return app.events.write(() => {
    let task = requireTask(app, id);
    checkAssignee(app, agent, 'body.agent');
    if (task.assignTo !== null && task.assignTo !== agent) {
      throw new AppError('conflict', `Task ${id} is held by agent "${task.assignTo}" (${task.status}); "${agent}" cannot claim it.`);
    }
    if (task.status !== 'pending' && task.status !== 'assigned') {
      throw new AppError('conflict', `Task ${id} is ${task.status}; only pending or assigned tasks can be claimed.`);
    }
    if (task.assignTo !== agent) {
      store.setAssignee(app.db, id, agent, nowIso());
      task = { ...task, assignTo: agent };
    }
    const reason = `claimed by ${agent}`;
    if (task.status === 'pending') task = step(app, task, 'assigned', { reason });
    task = step(app, task, 'in_progress', { reason });
    app.events.emit('task:claimed', { taskId: id, agent });
    return task;
  });
}

/** failed → pending, counting one retry; refused (409) once maxRetries are used. */
export function retryTask(app: App, id: string): Task {
  return app.events.write(() => {
    const task = requireTask(app, id);
    if (task.status !== 'failed') {
      throw new AppError('invalid_transition', `Task ${id} is ${task.status}: only a failed task can be retried (failed → pending), not ${task.status} → pending.`);
    }
    return step(app, task, 'pending', { reason: 'retry' });
  });
}
