import { z } from 'zod';
import { route } from '../../app.js';
import { pageAnswer } from '../common.js';
import { ApprovalIdParam, ApprovalIn, ApprovalListQuery, ApprovalOut, ApproveIn, RejectIn } from './schema.js';
import * as approvals from './service.js';

const tag = 'Approvals';
const base = '/api/v1/approvals';
const item = `${base}/{approvalId}`;

export const approvalRoutes = [
  route({
    method: 'GET',
    path: base,
    operationId: 'listApprovals',
    summary: 'List approval requests, newest first (filter by status, taskId, kind, runId; cursor)',
    description: 'Always an array, empty when there are none. When more follow, the X-Next-Cursor header holds the cursor of the next page.',
    tag,
    query: ApprovalListQuery,
    response: z.array(ApprovalOut),
    handler: async ({ app, query, setHeader }) => {
      return pageAnswer(setHeader, await approvals.listApprovals(app, query));
    },
  }),
  route({
    method: 'POST',
    path: base,
    operationId: 'requestApproval',
    errors: ['conflict', 'invalid_transition', 'unprocessable'],
    summary: 'Request an approval; a task named moves to awaiting_approval',
    description:
      'An unknown taskId or missionId is 422. A task that cannot move to awaiting_approval is 409 invalid_transition; a task that already has a pending approval is 409 conflict. timeoutAction (default reject) decides the request when timeoutSeconds have passed, also across daemon restarts.',
    tag,
    status: 201,
    body: ApprovalIn,
    response: ApprovalOut,
    handler: async ({ app, body }) => await approvals.requestApproval(app, body),
  }),
  route({
    method: 'GET',
    path: item,
    operationId: 'getApproval',
    summary: 'Show an approval request',
    tag,
    params: ApprovalIdParam,
    response: ApprovalOut,
    handler: async ({ app, params }) => await approvals.requireApproval(app, params.approvalId),
  }),
  route({
    method: 'POST',
    path: `${item}/approve`,
    operationId: 'approveApproval',
    errors: ['conflict', 'unprocessable'],
    summary: 'Approve a pending request: its task → assigned, or done when requested from review; a permission request lets the run use the tool (409 if already decided)',
    description:
      'The body may be omitted. If the task was deleted meanwhile, the decision is still recorded. While a request is pending its task cannot be moved out of awaiting_approval by hand (409 conflict). A permission request (kind "permission") moves no task: the run that asked goes on with the tool; alwaysAllow: true also adds the tool to the agent\'s allowedTools in the same transaction (422 on a task gate).',
    tag,
    params: ApprovalIdParam,
    body: ApproveIn,
    response: ApprovalOut,
    handler: async ({ app, params, body, principal }) =>
      await approvals.approve(app, params.approvalId, { note: body.note, resolvedBy: body.resolvedBy ?? principal?.name ?? null, alwaysAllow: body.alwaysAllow }),
  }),
  route({
    method: 'POST',
    path: `${item}/reject`,
    operationId: 'rejectApproval',
    errors: ['conflict'],
    summary: 'Reject a pending request with feedback: its task → pending, feedback appended, revisionCount + 1 (409 if already decided)',
    description:
      'If the task was deleted meanwhile, the decision is still recorded. While a request is pending its task cannot be moved out of awaiting_approval by hand (409 conflict). A task past tasks.maxRevisions revisions fails instead, saying so. A permission request (kind "permission") moves no task: the run that asked is refused the tool, with the feedback as the reason.',
    tag,
    params: ApprovalIdParam,
    body: RejectIn,
    response: ApprovalOut,
    handler: async ({ app, params, body, principal }) => await approvals.reject(app, params.approvalId, { feedback: body.feedback, resolvedBy: body.resolvedBy ?? principal?.name ?? null }),
  }),
];
