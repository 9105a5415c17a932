import { z } from 'zod';
import { IdCursor, PageLimit, Timestamp } from '../common.js';
import { TASK_STATES } from './state.js';
import { PRIORITIES } from './values.js';

export { PRIORITIES };

export const TaskStatus = z.enum(TASK_STATES);

/** Named levels rather than numbers: they read the same in the API, the CLI and events. */
export const Priority = z.enum(PRIORITIES).describe('low | normal | high | urgent; default normal.');

export const DEFAULT_MAX_RETRIES = 3;

const title = z.string().trim().min(1).max(500);
const description = z.string().max(100_000);
const agentRef = z.string().min(1).max(64).describe('Name of an existing agent.');
const missionId = z.string().min(1).max(128);
const dependsOn = z.array(z.string().min(1).max(128)).max(100).describe('Ids of existing tasks that must be done before this one can enter in_progress.');
const labels = z.array(z.string().trim().min(1).max(64)).max(50);
const maxRetries = z.int().min(0).max(100).describe('How many times a failed task may be retried (failed → pending).');
const sideEffects = z.boolean().describe('The task acts outside the project (deploys, sends mail, spends money): clients should ask for an approval before running it.');

export const TaskIn = z.strictObject({
  title,
  description: description.optional(),
  assignTo: agentRef.optional(),
  missionId: missionId
    .optional()
    .describe(
      "Mission the task belongs to (set at creation only). It must exist (else 422) and not be completed, failed or cancelled (409); the title must be unique within it (422). A draft mission's new task is created draft.",
    ),
  dependsOn: dependsOn.optional(),
  priority: Priority.optional(),
  labels: labels.optional(),
  maxRetries: maxRetries.optional().describe(`Default ${DEFAULT_MAX_RETRIES}.`),
  sideEffects: sideEffects.optional().describe('Default false.'),
  draft: z.boolean().optional().describe('Create the task as draft instead of pending.'),
});
export type TaskInput = z.output<typeof TaskIn>;

// The state never changes through PATCH; naming it gets a message that says where to go instead.
const noStatus = z.never({ error: 'status changes only through a transition: POST /api/v1/tasks/{taskId}/transition' });

export const TaskPatch = z.strictObject({
  title: title.optional(),
  description: description.nullable().optional(),
  assignTo: agentRef.nullable().optional(),
  dependsOn: dependsOn.nullable().optional(),
  priority: Priority.optional(),
  labels: labels.nullable().optional(),
  maxRetries: maxRetries.optional(),
  sideEffects: sideEffects.optional(),
  status: noStatus.optional(),
});
export type TaskPatchInput = z.output<typeof TaskPatch>;

const LeaseId = z.string().min(1).max(128);

export const TransitionIn = z.strictObject({
  to: TaskStatus,
  reason: z.string().max(2000).optional().describe('Why; carried in the task:transition event.'),
  expectedFrom: TaskStatus.optional().describe('Refuse (409 conflict) unless the task is in this state now.'),
  result: z.unknown().optional().describe('Any JSON value, stored as the task result; only with to = review, done or failed.'),
  leaseId: LeaseId.optional().describe('The claim lease of the caller: refused (409 conflict) unless it is the task current, unexpired lease.'),
});

export const ClaimIn = z.strictObject({ agent: agentRef });

export const NextIn = z.strictObject({ agent: agentRef.describe('The agent asking for work (must exist).') });

export const HeartbeatIn = z.strictObject({ leaseId: LeaseId.describe('The leaseId the claim answered.') });

export const LeaseOut = z.object({
  taskId: z.string(),
  agent: z.string().nullable().describe('The holder.'),
  leaseId: z.string(),
  leaseExpiresAt: Timestamp.describe('When the task is released unless a heartbeat extends the lease.'),
});
export type Lease = z.output<typeof LeaseOut>;

export const CommentIn = z.strictObject({
  body: z.string().trim().min(1).max(20_000).describe('The note, plain text or Markdown.'),
  author: z.string().trim().min(1).max(128).optional().describe('Who writes it (an agent name, a person); default the name of the API key used.'),
});
export type CommentInput = z.output<typeof CommentIn>;

export const CommentOut = z.object({
  id: z.string(),
  taskId: z.string(),
  author: z.string(),
  body: z.string(),
  createdAt: Timestamp,
});
export type Comment = z.output<typeof CommentOut>;

export const CommentListQuery = z.strictObject({ limit: PageLimit, cursor: IdCursor });

export const TaskIdParam = z.strictObject({ taskId: z.string().min(1).max(128) });

export const TaskListQuery = z.strictObject({
  status: TaskStatus.optional(),
  assignTo: z.string().min(1).max(64).optional(),
  missionId: z.string().min(1).max(128).optional(),
  limit: PageLimit,
  cursor: IdCursor,
});
export type TaskListFilter = z.output<typeof TaskListQuery>;

export const TaskOut = z
  .object({
    id: z.string(),
    title: z.string(),
    description: z.string().nullable(),
    assignTo: z.string().nullable(),
    missionId: z.string().nullable(),
    dependsOn: z.array(z.string()),
    status: TaskStatus,
    priority: Priority,
    labels: z.array(z.string()),
    retries: z.int(),
    maxRetries: z.int(),
    sideEffects: z.boolean(),
    result: z.unknown().describe('Set by a transition to review, done or failed; null until then.'),
    revisionCount: z.int().describe('How many times the task was sent back for revision (approval rejected).'),
    leaseExpiresAt: Timestamp.nullable().describe('While the claim of `assignTo` holds the task (in_progress): when it is released back to pending unless a heartbeat extends it. null otherwise.'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Task' });
export type Task = z.output<typeof TaskOut>;

export const ClaimOut = TaskOut.extend({
  leaseId: z.string().describe('Proves the claim: send it with heartbeats (POST .../heartbeat) and, optionally, with transitions.'),
  leaseExpiresAt: Timestamp,
});
export type Claimed = z.output<typeof ClaimOut>;

export const NextOut = z.object({ task: ClaimOut.nullable().describe('The task claimed for the agent, or null when none is ready for it.') });
