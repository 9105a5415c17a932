import { serviceKey, type App } from '../../app.js';
import type { Task, TaskInput } from './schema.js';
import type { TaskState } from './state.js';

// How other resources (missions, approvals) take part in a task's life. Each daemon owns one
// TaskHooks (created by the tasks' wire() and filled by the missions' and approvals', where a reader sees who listens); nothing registers
// on import, so two daemons in one process never hear each other's tasks.

export interface TaskTransition {
  /** The task after the move. */
  task: Task;
  from: TaskState;
  to: TaskState;
  reason?: string;
}

export type TransitionListener = (app: App, change: TaskTransition) => void | Promise<void>;

/** Decides whether a legal move may happen now; throws an AppError to refuse it. */
export type TransitionGuard = (app: App, task: Task, to: TaskState) => void | Promise<void>;

/**
 * Decides whether a task may be created as asked; throws an AppError to refuse it, or returns the
 * status to create it in instead of `status` (a draft mission's new tasks wait in draft).
 */
export type CreateHook = (app: App, input: TaskInput, status: TaskState) => TaskState | void | Promise<TaskState | void>;

/** Why a task is being removed: by itself (DELETE /tasks/{id}) or with its mission (cascade). */
export type RemovalCause = 'task' | 'mission';

export type RemovalListener = (app: App, removed: Task, cause: RemovalCause) => void | Promise<void>;

export class TaskHooks {
  readonly transitionListeners = new Set<TransitionListener>();
  readonly transitionGuards = new Set<TransitionGuard>();
  readonly createHooks = new Set<CreateHook>();
  readonly removalListeners = new Set<RemovalListener>();

  /**
   * Hears every state change inside the transaction that makes it: a listener may write and emit
   * its own events, and a listener that throws rolls the transition back.
   */
  onTransition(listener: TransitionListener): () => void {
    return add(this.transitionListeners, listener);
  }

  /**
   * Vetoes a move the state machine allows (a paused mission's tasks may not start). Guards run
   * inside the transition's transaction, before anything is written.
   */
  beforeTransition(guard: TransitionGuard): () => void {
    return add(this.transitionGuards, guard);
  }

  /**
   * Applies another resource's rules to a new task (missions: the mission must exist and not be
   * over, titles are unique within it). Hooks run inside the creation's transaction, after the
   * task's own checks and before anything is written.
   */
  beforeCreate(hook: CreateHook): () => void {
    return add(this.createHooks, hook);
  }

  /**
   * Hears a task's removal (a mission whose last open task goes may now be complete). Listeners run
   * inside the removal's transaction, after the delete and its events, and receive the task as it
   * was; one that throws rolls the removal back.
   */
  onRemoved(listener: RemovalListener): () => void {
    return add(this.removalListeners, listener);
  }
}

function add<T>(set: Set<T>, item: T): () => void {
  set.add(item);
  return () => set.delete(item);
}

/** The daemon's task hooks (provided by the tasks' wire()). */
export const TASK_HOOKS = serviceKey<TaskHooks>('tasks.hooks');
