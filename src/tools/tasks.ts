import { z } from 'zod';
import { addComment, taskWithComments } from '../resources/tasks/comments.js';
import { ClaimOut, CommentOut, LeaseOut, TaskIn, TaskOut, TaskStatus, TransitionIn } from '../resources/tasks/schema.js';
import * as tasks from '../resources/tasks/service.js';
import { defineTool } from './define.js';

// Task tools: the board as an agent works it (find work, claim it, keep the claim alive, report).

const taskId = z.string().min(1).max(128).describe('The task id (a UUID).');
const agent = z.string().min(1).max(64).describe('Your agent name, as registered in svc (see agent_list).');
const cursor = z.string().max(128).optional().describe('nextCursor of the previous call, to read the next page.');
const limit = z.int().min(1).max(100).default(20).describe('How many to return (1-100, default 20).');

const line = (t: { id: string; title: string; status: string; assignTo: string | null }) => `${t.id} "${t.title}" ${t.status}${t.assignTo ? ` (${t.assignTo})` : ''}`;

const leaseNote = (t: { leaseId: string; leaseExpiresAt: string }) => `lease ${t.leaseId} until ${t.leaseExpiresAt}: call task_heartbeat before then or the task goes back to pending`;

export const taskTools = [
  defineTool({
    name: 'task_list',
    title: 'List tasks',
    description:
      'List tasks on the board, newest first. Filter by status (draft, pending, assigned, in_progress, review, awaiting_approval, done, failed), assignTo (agent name) or missionId. Returns up to `limit` tasks and a nextCursor for the next page (null on the last).',
    input: z.strictObject({
      status: TaskStatus.optional().describe('Only tasks in this state.'),
      assignTo: z.string().min(1).max(64).optional().describe('Only tasks assigned to this agent.'),
      missionId: z.string().min(1).max(128).optional().describe('Only tasks of this mission.'),
      limit,
      cursor,
    }),
    output: z.object({ tasks: z.array(TaskOut), nextCursor: z.string().nullable() }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    handler: async ({ app }, q) => {
      const page = await tasks.listTasks(app, { ...q, cursor: q.cursor });
      return { tasks: page.items, nextCursor: page.next };
    },
    summary: (o) => (o.tasks.length ? `${o.tasks.length} task(s)${o.nextCursor ? ', more with nextCursor' : ''}:\n${o.tasks.map(line).join('\n')}` : 'No tasks match.'),
  }),
  defineTool({
    name: 'task_get',
    title: 'Read a task',
    description: 'Read one task: its fields, state, result, who holds it and until when (leaseExpiresAt). With withNotes: true, also its 20 latest notes (task_comment), newest first.',
    input: z.strictObject({ taskId, withNotes: z.boolean().optional().describe("Also return the task's latest notes (default false).") }),
    output: z.object({ task: TaskOut, comments: z.array(CommentOut).optional().describe('The 20 latest notes, newest first; only with withNotes.') }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    handler: async ({ app }, { taskId, withNotes }) => (withNotes ? await taskWithComments(app, taskId, 20) : { task: await tasks.requireTask(app, taskId) }),
    summary: (o) =>
      [
        line(o.task),
        o.task.description ? o.task.description.slice(0, 500) + (o.task.description.length > 500 ? '…' : '') : '(no description)',
        ...(o.comments ? [`${o.comments.length} note(s)`] : []),
      ].join('\n'),
  }),
  defineTool({
    name: 'task_create',
    title: 'Create a task',
    description:
      'Create a task on the board (pending, or draft with draft: true). assignTo must name an existing agent; dependsOn lists task ids that must be done first; missionId adds it to a mission.',
    input: TaskIn,
    output: z.object({ task: TaskOut }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    handler: async ({ app }, input) => ({ task: await tasks.createTask(app, input) }),
    summary: (o) => `Created ${line(o.task)}`,
  }),
  defineTool({
    name: 'task_next',
    title: 'Claim the next task',
    description:
      'Ask for work: claims the most urgent, then oldest, task you may take (pending or assigned, unassigned or assigned to you, dependencies done) and starts it (in_progress). Returns the task with a leaseId and leaseExpiresAt, or task: null when nothing is ready. Keep the claim alive with task_heartbeat; finish with task_transition.',
    input: z.strictObject({ agent }),
    output: z.object({ task: ClaimOut.nullable() }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    handler: async ({ app }, { agent }) => ({ task: await tasks.nextTask(app, agent) }),
    summary: (o) => (o.task ? `Claimed ${line(o.task)}; ${leaseNote(o.task)}.` : 'No task is ready for you now.'),
  }),
  defineTool({
    name: 'task_claim',
    title: 'Claim a task',
    description:
      'Claim one given task (pending or assigned, not held by another agent) and start it (in_progress). Returns the task with a leaseId and leaseExpiresAt; keep the claim alive with task_heartbeat. Fails with conflict if another agent holds it.',
    input: z.strictObject({ taskId, agent }),
    output: z.object({ task: ClaimOut }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    handler: async ({ app }, { taskId, agent }) => ({ task: await tasks.claimTask(app, taskId, agent) }),
    summary: (o) => `Claimed ${line(o.task)}; ${leaseNote(o.task)}.`,
  }),
  defineTool({
    name: 'task_heartbeat',
    title: 'Keep a claim alive',
    description:
      'Tell svc you are still working on a claimed task: extends the lease from now. Call it well before leaseExpiresAt (every few minutes). Fails with conflict when the lease already expired or the task was released: then claim it again.',
    input: z.strictObject({ taskId, leaseId: z.string().min(1).max(128).describe('The leaseId your claim returned.') }),
    output: LeaseOut,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    handler: async ({ app }, { taskId, leaseId }) => await tasks.heartbeatTask(app, taskId, leaseId),
    summary: (o) => `Lease ${o.leaseId} on task ${o.taskId} extended until ${o.leaseExpiresAt}.`,
  }),
  defineTool({
    name: 'task_transition',
    title: 'Move a task',
    description:
      'Move a task to another state. Legal moves: draft→pending; pending→assigned; assigned→in_progress; in_progress→review|done|failed (done only where the project does not set tasks.requireReview); review→done|failed; failed→pending (a retry). Pass expectedFrom (the state you believe it is in) so a stale view fails instead of overwriting, leaseId when you hold the claim, result (any JSON) with review, done or failed, and reason to explain.',
    input: TransitionIn.extend({ taskId }),
    output: z.object({ task: TaskOut }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    handler: async ({ app }, { taskId, ...move }) => ({ task: await tasks.transitionTask(app, taskId, move.to, move) }),
    summary: (o) => `Task ${o.task.id} is now ${o.task.status}.`,
  }),
  defineTool({
    name: 'task_comment',
    title: 'Add a note to a task',
    description: "Append a note to a task's activity (progress, a question, a finding) for people and other agents to read. author: your agent name.",
    input: z.strictObject({
      taskId,
      body: z.string().trim().min(1).max(20_000).describe('The note, plain text or Markdown.'),
      author: z.string().trim().min(1).max(128).optional().describe('Who writes it; default the name of the API key.'),
    }),
    output: z.object({ comment: CommentOut }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    handler: async ({ app, principal }, { taskId, ...input }) => ({ comment: await addComment(app, taskId, input, principal?.name ?? 'unknown') }),
    summary: (o) => `Note ${o.comment.id} added to task ${o.comment.taskId}.`,
  }),
];
