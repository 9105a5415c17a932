import { z } from 'zod';
import { route } from '../../app.js';
import { pageAnswer, Removed } from '../common.js';
import { addComment, listComments } from './comments.js';
import { ClaimIn, ClaimOut, CommentIn, CommentListQuery, CommentOut, HeartbeatIn, LeaseOut, NextIn, NextOut, TaskIdParam, TaskIn, TaskListQuery, TaskOut, TaskPatch, TransitionIn } from './schema.js';
import * as tasks from './service.js';

const tag = 'Tasks';
const base = '/api/v1/tasks';
const item = `${base}/{taskId}`;

/** GET /api/v1/tasks and the reference's reconciliation path share everything but path and id. */
const listRoute = (path: string, operationId: string, summary: string) =>
  route({
    method: 'GET',
    path,
    operationId,
    summary,
    tag,
    query: TaskListQuery,
    response: z.array(TaskOut),
    description: 'Newest first. Filters combine with AND. When more tasks follow, the X-Next-Cursor header holds the cursor of the next page.',
    handler: async ({ app, query, setHeader }) => pageAnswer(setHeader, await tasks.readTaskPage(app, query)),
  });

export const taskRoutes = [
  listRoute(base, 'listTasks', 'List tasks (filter by status, assignTo, missionId; cursor)'),
  // The reference names this path for reconciling state after an SSE reconnect.
  listRoute('/v1/tasks', 'listTasksForReconciliation', 'List tasks at the reference reconciliation path (same as GET /api/v1/tasks)'),
  route({
    method: 'POST',
    path: base,
    operationId: 'createTask',
    errors: ['conflict', 'unprocessable'],
    summary: 'Create a task (pending, or draft with draft: true)',
    description:
      "With missionId the task joins that mission under the mission's rules: unknown mission → 422 (details body.missionId); a completed, failed or cancelled mission → 409 conflict; a title the mission already has → 422 (details body.title); a draft mission's task is created draft whatever draft says.",
    tag,
    status: 201,
    body: TaskIn,
    response: TaskOut,
    handler: async ({ app, body }) => await tasks.createTask(app, body),
  }),
  route({
    method: 'GET',
    path: item,
    operationId: 'getTask',
    summary: 'Show a task',
    tag,
    params: TaskIdParam,
    response: TaskOut,
    handler: ({ app, params }) => tasks.readTask(app, params.taskId),
  }),
  route({
    method: 'PATCH',
    path: item,
    operationId: 'updateTask',
    errors: ['unprocessable'],
    summary: 'Update a task; never its status (a missing field is kept, null clears it)',
    tag,
    params: TaskIdParam,
    body: TaskPatch,
    response: TaskOut,
    handler: async ({ app, params, body }) => await tasks.updateTask(app, params.taskId, body),
  }),
  route({
    method: 'POST',
    path: `${item}/transition`,
    operationId: 'transitionTask',
    errors: ['conflict', 'invalid_transition'],
    summary: 'Move a task to another state (409 invalid_transition for a move the state machine forbids)',
    description:
      'awaiting_approval is entered only through an approval request (POST /api/v1/approvals): a move there by hand is 409 invalid_transition. ' +
      'A task waiting for a pending request leaves only through its decision (409 conflict otherwise). ' +
      'With leaseId (the holder of a claim), the move is refused (409 conflict) unless that lease is current and unexpired. Leaving in_progress ends the lease.',
    tag,
    params: TaskIdParam,
    body: TransitionIn,
    response: TaskOut,
    handler: async ({ app, params, body }) => await tasks.transitionTask(app, params.taskId, body.to, body),
  }),
  route({
    method: 'POST',
    path: `${item}/claim`,
    operationId: 'claimTask',
    errors: ['conflict', 'unprocessable'],
    summary: 'An agent claims a pending or assigned task and starts it (atomic; 409 if another agent holds it)',
    description:
      'The agent must exist (else 422 unprocessable). A pending task passes through assigned, so two task:transition events fire. The claim is a lease: the answer carries leaseId and leaseExpiresAt (tasks.leaseSeconds in project.json, default 900). Without a heartbeat before then, the task goes back to pending with no assignee (task:lease_expired).',
    tag,
    params: TaskIdParam,
    body: ClaimIn,
    response: ClaimOut,
    handler: async ({ app, params, body }) => await tasks.claimTask(app, params.taskId, body.agent),
  }),
  route({
    method: 'POST',
    path: `${item}/heartbeat`,
    operationId: 'heartbeatTask',
    errors: ['conflict'],
    summary: 'The holder of a claim extends its lease by tasks.leaseSeconds from now (409 once the lease expired or was released)',
    tag,
    params: TaskIdParam,
    body: HeartbeatIn,
    response: LeaseOut,
    handler: async ({ app, params, body }) => await tasks.heartbeatTask(app, params.taskId, body.leaseId),
  }),
  route({
    method: 'POST',
    path: `${base}/next`,
    operationId: 'claimNextTask',
    errors: ['conflict', 'unprocessable'],
    summary: 'Claim the next task an agent may take, or answer task: null when none is ready',
    description:
      'Candidates: pending or assigned tasks that are unassigned or assigned to the agent, whose dependencies are all done. The most urgent priority first, then the oldest. The claim is the same as POST .../claim (same events, same lease).',
    tag,
    body: NextIn,
    response: NextOut,
    handler: async ({ app, body }) => ({ task: await tasks.nextTask(app, body.agent) }),
  }),
  route({
    method: 'POST',
    path: `${item}/comments`,
    operationId: 'addTaskComment',
    summary: "Append a note to a task's activity",
    tag,
    status: 201,
    params: TaskIdParam,
    body: CommentIn,
    response: CommentOut,
    handler: async ({ app, params, body, principal }) => await addComment(app, params.taskId, body, principal?.name ?? 'unknown'),
  }),
  route({
    method: 'GET',
    path: `${item}/comments`,
    operationId: 'listTaskComments',
    summary: "A task's notes, newest first (cursor)",
    tag,
    params: TaskIdParam,
    query: CommentListQuery,
    response: z.array(CommentOut),
    handler: async ({ app, params, query, setHeader }) => pageAnswer(setHeader, await listComments(app, params.taskId, query)),
  }),
  route({
    method: 'POST',
    path: `${item}/retry`,
    operationId: 'retryTask',
    errors: ['conflict', 'invalid_transition'],
    summary: 'Send a failed task back to pending, counting one retry (409 once maxRetries are used)',
    tag,
    params: TaskIdParam,
    response: TaskOut,
    handler: async ({ app, params }) => await tasks.retryTask(app, params.taskId),
  }),
  route({
    method: 'DELETE',
    path: item,
    operationId: 'deleteTask',
    errors: ['conflict'],
    summary: 'Delete a task (tasks depending on it lose that dependency)',
    description: 'An active or paused mission left with tasks that are all done completes (mission:completed, same transaction); a mission left with no tasks stays as it is.',
    tag,
    params: TaskIdParam,
    response: Removed,
    handler: async ({ app, params }) => {
      await tasks.removeTask(app, params.taskId);
      return { removed: true as const };
    },
  }),
];
