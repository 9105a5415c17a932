import { z } from 'zod';
import { AppError } from '../kernel/errors.js';
import { getAgent } from '../resources/agents/service.js';
import { askPermission, decisionOf, markAnswered, permissionAnswer } from '../resources/approvals/permissions.js';
import { getRun, RUNNER } from '../resources/runs/service.js';
import { configuredSecrets } from '../secrets.js';
import { defineTool } from './define.js';

// The permission prompt of a run's CLI: with permissionMode "ask", svc starts Claude Code with
// --permission-prompt-tool=mcp__svc__permission_prompt, and Claude Code calls this tool, with the
// run's key, for each tool use its rules do not already allow. The call becomes an svc approval
// (kind "permission") and waits for a person's decision (or the timeout's); the answer is the JSON
// Claude Code reads: {"behavior":"allow","updatedInput":…} or {"behavior":"deny","message":…}.

const Answer = z.object({
  behavior: z.enum(['allow', 'deny']),
  updatedInput: z.record(z.string(), z.unknown()).optional().describe('allow: the input the tool runs with (as the CLI sent it).'),
  message: z.string().optional().describe('deny: why, for the model.'),
});

export const permissionTools = [
  defineTool({
    name: 'permission_prompt',
    title: 'Ask a person for permission',
    description:
      'Not for you to call: Claude Code calls it itself, for each tool use that needs a person\'s permission, when svc runs it with permissionMode "ask". It records an svc approval request showing the tool and its input, waits for the decision (minutes, up to runner.permissionTimeoutSec) and answers allow or deny with the reason. Only a run\'s key may call it.',
    input: z.object({
      tool_name: z.string().min(1).max(1000).describe('The tool the agent wants to use (Bash, Edit, mcp__server__tool).'),
      input: z.record(z.string(), z.unknown()).describe("The tool's input."),
      tool_use_id: z.string().max(1000).optional().describe("The CLI's id of the tool call."),
    }),
    output: Answer,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    audience: 'run',
    textOnly: true,
    waits: true,
    handler: async ({ app, principal, signal }, { tool_name: tool, input, tool_use_id }) => {
      const runId = principal!.runId!;
      const run = await getRun(app, runId);
      if (!run || (run.status !== 'starting' && run.status !== 'running')) throw new AppError('conflict', `Run ${runId} is ${run?.status ?? 'gone'}; only a live run asks for permissions.`);
      // Allowed for good meanwhile ("always allow" on an earlier request): the CLI's own list is from its start.
      if ((await getAgent(app.db, run.agent))?.allowedTools.includes(tool)) return { behavior: 'allow' as const, updatedInput: input };
      const { permissionTimeoutSec, permissionTimeoutAction } = app.config().runner;
      const asked = await askPermission(
        app,
        { runId, taskId: run.taskId, missionId: run.missionId, agent: run.agent, tool, input, toolUseId: tool_use_id ?? null },
        { timeoutSec: permissionTimeoutSec, timeoutAction: permissionTimeoutAction, secrets: await configuredSecrets(app) },
      );
      // The CLI prints nothing while it waits: that is no stall.
      const release = app.services.get(RUNNER)?.holdStall(runId) ?? (() => {});
      try {
        const decided = await decisionOf(app, asked.id, signal);
        await markAnswered(app, decided.id);
        return permissionAnswer(decided, input);
      } finally {
        release();
      }
    },
    // Claude Code reads the answer from the text: the JSON itself.
    summary: (o) => JSON.stringify(o),
  }),
];
