import { z } from 'zod';
import { IdCursor, PageLimit, Timestamp } from '../common.js';
import { TaskStatus } from '../tasks/schema.js';
import { APPROVAL_KINDS, APPROVAL_STATUSES, MAX_TIMEOUT_SECONDS, TIMEOUT_ACTIONS } from './values.js';

export { APPROVAL_KINDS, APPROVAL_STATUSES, MAX_TIMEOUT_SECONDS, TIMEOUT_ACTIONS };

export const ApprovalStatus = z.enum(APPROVAL_STATUSES);
export type ApprovalStatus = z.output<typeof ApprovalStatus>;

export const TimeoutAction = z.enum(TIMEOUT_ACTIONS);
export type TimeoutAction = z.output<typeof TimeoutAction>;

export const ApprovalKind = z.enum(APPROVAL_KINDS);
export type ApprovalKind = z.output<typeof ApprovalKind>;

/** A year: long enough for any human gate, short enough that expires_at stays a sane date. */

const who = z.string().trim().min(1).max(128);
const id = z.string().min(1).max(128);

export const ApprovalIn = z
  .strictObject({
    taskId: id.optional().describe('Task to gate: it moves to awaiting_approval (409 invalid_transition if it cannot).'),
    missionId: id.optional().describe('Mission the request concerns; taken from the task when omitted.'),
    requestedBy: who.describe('Who asks: an agent name, "orchestrator", a person.'),
    title: z.string().trim().min(1).max(500),
    reason: z.string().max(10_000).optional(),
    payload: z.unknown().optional().describe('Any JSON value the approver should see (a diff, a command, an amount).'),
    timeoutSeconds: z.int().min(1).max(MAX_TIMEOUT_SECONDS).optional().describe('Decide automatically with timeoutAction after this long.'),
    timeoutAction: TimeoutAction.optional().describe('What a timeout decides; default reject. Only with timeoutSeconds.'),
  })
  .superRefine((v, ctx) => {
    if (v.timeoutAction !== undefined && v.timeoutSeconds === undefined) {
      ctx.addIssue({ code: 'custom', path: ['timeoutAction'], message: 'only allowed together with timeoutSeconds' });
    }
  });
export type ApprovalInput = z.output<typeof ApprovalIn>;

export const ApproveIn = z.strictObject({
  note: z.string().max(10_000).optional(),
  resolvedBy: who.optional().describe('Who decides; default the name of the API key used.'),
  alwaysAllow: z
    .boolean()
    .optional()
    .describe("A permission request only: also add its tool to the agent's allowedTools, in the same transaction, so the agent is not asked again (422 for a task gate)."),
});
export type ApproveInput = z.output<typeof ApproveIn>;

export const RejectIn = z.strictObject({
  feedback: z
    .string()
    .trim()
    .min(1)
    .max(10_000)
    .describe('A task gate: appended to the task description, the task goes back to pending. A permission request: the reason the agent is given for the refusal.'),
  resolvedBy: who.optional().describe('Who decides; default the name of the API key used.'),
});
export type RejectInput = z.output<typeof RejectIn>;

export const ApprovalIdParam = z.strictObject({ approvalId: z.string().min(1).max(128) });

export const ApprovalListQuery = z.strictObject({
  status: ApprovalStatus.optional(),
  taskId: id.optional(),
  kind: ApprovalKind.optional().describe('Only task gates, or only permission requests of runs.'),
  runId: id.optional().describe("Only this run's permission requests."),
  limit: PageLimit,
  cursor: IdCursor,
});
export type ApprovalListFilter = z.output<typeof ApprovalListQuery>;

export const ApprovalOut = z
  .object({
    id: z.string(),
    kind: ApprovalKind.describe('task: holds its task in awaiting_approval until decided. permission: a tool use a run asks about; the task stays in_progress while the run waits.'),
    taskId: z.string().nullable(),
    missionId: z.string().nullable(),
    requestedBy: z.string(),
    title: z.string(),
    reason: z.string().nullable(),
    payload: z.unknown().describe('As given; null when none. A permission request: {tool, input, toolUseId}, the input with secrets redacted (a large one: its JSON text, cut).'),
    status: ApprovalStatus,
    timeoutAction: TimeoutAction.nullable().describe('What a timeout decides; null without a timeout.'),
    expiresAt: Timestamp.nullable().describe('When a pending request is decided by timeoutAction; null without a timeout.'),
    taskFrom: TaskStatus.nullable().describe('The task state when the approval was requested; approve returns a task from review to done.'),
    note: z.string().nullable(),
    feedback: z.string().nullable(),
    resolvedBy: z.string().nullable().describe('"timeout" when decided by the timeout.'),
    resolvedAt: Timestamp.nullable(),
    timedOut: z.boolean(),
    runId: z.string().nullable().describe('A permission request: the run that asks.'),
    agent: z.string().nullable().describe('A permission request: the agent whose CLI asks.'),
    tool: z.string().nullable().describe('A permission request: the tool it asks to use (payload.input holds its input).'),
    alwaysAllowed: z.string().nullable().describe("A permission request approved with alwaysAllow: the tool added to the agent's allowedTools."),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Approval' });
export type Approval = z.output<typeof ApprovalOut>;
