import { z } from 'zod';
import { RunOut, RunStatus } from '../resources/runs/schema.js';
import * as runs from '../resources/runs/service.js';
import { defineTool } from './define.js';

// Run tools: what svc's runs of agents' CLIs did (an agent, or the orchestrator, can look at a
// teammate's run: its status, result, branch and usage).

const line = (r: { id: string; agent: string; status: string; taskId: string; summary: string | null; error: string | null }) =>
  `${r.id} ${r.agent} ${r.status} on task ${r.taskId}${r.error ? `: ${r.error}` : r.summary ? `: ${r.summary.slice(0, 200)}` : ''}`;

export const runTools = [
  defineTool({
    name: 'run_list',
    title: 'List runs',
    description:
      "List runs of agents' CLIs on tasks, newest first: who ran, on which task, how it ended (status succeeded, failed, cancelled, timed_out, lost; or queued, starting, running, paused while live), its summary, branch and token usage. Filter by taskId, agent or status. Returns up to `limit` runs and a nextCursor (null on the last page).",
    input: z.strictObject({
      taskId: z.string().min(1).max(128).optional().describe('Only runs of this task.'),
      agent: z.string().min(1).max(64).optional().describe('Only runs of this agent.'),
      status: RunStatus.optional().describe('Only runs in this state.'),
      limit: z.int().min(1).max(100).default(20).describe('How many to return (1-100, default 20).'),
      cursor: z.string().max(128).optional().describe('nextCursor of the previous call, to read the next page.'),
    }),
    output: z.object({ runs: z.array(RunOut), nextCursor: z.string().nullable() }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    handler: async ({ app }, q) => {
      const page = await runs.listRuns(app, { ...q, cursor: q.cursor });
      return { runs: page.items, nextCursor: page.next };
    },
    summary: (o) => (o.runs.length ? `${o.runs.length} run(s)${o.nextCursor ? ', more with nextCursor' : ''}:\n${o.runs.map(line).join('\n')}` : 'No runs match.'),
  }),
  defineTool({
    name: 'run_get',
    title: 'Read a run',
    description: "Read one run: its status, the agent's final summary or the error, the branch and commit of its work, the diff stat, turns and token usage.",
    input: z.strictObject({ runId: z.string().min(1).max(128).describe('The run id (a UUID).') }),
    output: z.object({ run: RunOut }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    handler: async ({ app }, { runId }) => ({ run: await runs.requireRun(app, runId) }),
    summary: (o) =>
      [
        line(o.run),
        o.run.branch ? `branch ${o.run.branch}${o.run.headCommit ? ` at ${o.run.headCommit.slice(0, 12)}` : ''}` : null,
        o.run.diffStat ? `${o.run.diffStat.files} files +${o.run.diffStat.added} -${o.run.diffStat.removed}` : null,
      ]
        .filter(Boolean)
        .join('\n'),
  }),
];
