// The task state machine: the table of legal moves (DESIGN section 5) and the one pure function
// that decides a move. Every path that changes a task's status (transition, claim, retry, and the
// missions/approvals resources later) goes through checkTransition, so the rules live here only.
// One departure from DESIGN: in_progress → done is legal, as the reference API lists it (a task
// done without a review step); a project that wants every task reviewed sets tasks.requireReview.

export const TASK_STATES = ['draft', 'pending', 'assigned', 'in_progress', 'review', 'awaiting_approval', 'done', 'failed'] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const LEGAL_MOVES: Readonly<Record<TaskState, readonly TaskState[]>> = {
  draft: ['pending'],
  pending: ['assigned', 'awaiting_approval'],
  assigned: ['in_progress', 'awaiting_approval'],
  in_progress: ['review', 'done', 'failed', 'awaiting_approval'],
  review: ['done', 'failed', 'awaiting_approval'],
  awaiting_approval: ['assigned', 'pending', 'done', 'failed'],
  failed: ['pending'],
  done: [],
};

/** Facts about the task the guards need; a guard whose facts are not given is not checked. */
export interface TransitionGuard {
  /** Ids of the task's dependencies that are not done: they block in_progress. */
  openDependencies?: readonly string[];
  /** failed→pending is a retry: it needs retries < maxRetries. */
  retries?: number;
  maxRetries?: number;
  /** project.json tasks.requireReview: in_progress → done is refused, the work must pass review. */
  requireReview?: boolean;
}

export type TransitionCheck = { ok: true; retry: boolean } | { ok: false; code: 'invalid_transition' | 'conflict'; reason: string };

export function checkTransition(from: TaskState, to: TaskState, guard: TransitionGuard = {}): TransitionCheck {
  if (!LEGAL_MOVES[from].includes(to)) {
    const allowed = LEGAL_MOVES[from];
    const hint = allowed.length ? `from ${from} a task may move to: ${allowed.join(', ')}` : `${from} is terminal`;
    return { ok: false, code: 'invalid_transition', reason: `A task cannot move from ${from} to ${to}; ${hint}.` };
  }
  if (from === 'in_progress' && to === 'done' && guard.requireReview) {
    return {
      ok: false,
      code: 'invalid_transition',
      reason: 'A task cannot move from in_progress to done while tasks.requireReview is set in project.json; move it to review, then to done.',
    };
  }
  if (to === 'in_progress' && guard.openDependencies?.length) {
    return {
      ok: false,
      code: 'conflict',
      reason: `A task cannot move from ${from} to in_progress while its dependencies are not done: ${guard.openDependencies.join(', ')}.`,
    };
  }
  const retry = from === 'failed' && to === 'pending';
  if (retry && guard.retries !== undefined && guard.maxRetries !== undefined && guard.retries >= guard.maxRetries) {
    return {
      ok: false,
      code: 'conflict',
      reason: `A task cannot move from failed to pending: it has used ${guard.retries} of its ${guard.maxRetries} retries (raise maxRetries to allow more).`,
    };
  }
  return { ok: true, retry };
}
