import { z } from 'zod';
import { route } from '../../app.js';
import { pageAnswer } from '../common.js';
import { TaskIdParam } from '../tasks/schema.js';
import { readDiff, readRunners, readRuntimes } from './inspect.js';
import { DiffOut, LogItemOut, LogQuery, QueueOut, RunIdParam, RunIn, RunListQuery, RunnerOut, RunOut, RuntimeFoundOut, UsageQuery, UsageRowOut } from './schema.js';
import * as runs from './service.js';

const tag = 'Runs';
const base = '/api/v1/runs';
const item = `${base}/{runId}`;

export const runRoutes = [
  route({
    method: 'POST',
    path: '/api/v1/tasks/{taskId}/runs',
    operationId: 'startTaskRun',
    errors: ['conflict', 'unprocessable'],
    summary: "Start a run of the task's agent by hand (or of the agent named)",
    description:
      "Queues a run now; it starts as soon as the agent, the project and a runner have a free slot (run:queued, then run:started). The task must be pending, assigned, or failed with a retry left (409 otherwise, and 409 while it has a live run). No assignee and no agent, an unknown agent, or an agent without a runtime: 422 naming body.agent. A prompt replaces what the run is asked to do (the task's title and description are still given).",
    tag: 'Tasks',
    status: 201,
    params: TaskIdParam,
    body: RunIn,
    response: RunOut,
    handler: async ({ app, params, body }) => await runs.startRunByHand(app, params.taskId, body),
  }),
  route({
    method: 'GET',
    path: base,
    operationId: 'listRuns',
    summary: 'List runs, newest first (filter by taskId, agent, status; cursor)',
    description: 'When more runs follow, the X-Next-Cursor header holds the cursor of the next page.',
    tag,
    query: RunListQuery,
    response: z.array(RunOut),
    handler: async ({ app, query, setHeader }) => pageAnswer(setHeader, await runs.readRunPage(app, query)),
  }),
  route({
    method: 'GET',
    path: item,
    operationId: 'getRun',
    summary: 'Show a run',
    tag,
    params: RunIdParam,
    response: RunOut,
    handler: ({ app, params }) => runs.readRun(app, params.runId),
  }),
  route({
    method: 'GET',
    path: `${item}/log`,
    operationId: 'getRunLog',
    summary: "Read a run's log: readable items in order (after a seq; at most limit)",
    description:
      'Items of kinds text, thinking, tool_call, tool_result, command, file_change, usage, rate_limit, error, stderr, system and raw (a line no parser understood), each with seq and at; a run keeps runner.maxLogItems of them and then one `truncated` item saying how many were left out. Follow a live run with after = the last seq read, or with run:activity events.',
    tag,
    params: RunIdParam,
    query: LogQuery,
    response: z.array(LogItemOut),
    handler: ({ app, params, query }) => runs.readRunLog(app, params.runId, query.after, query.limit),
  }),
  route({
    method: 'GET',
    path: `${item}/diff`,
    operationId: 'getRunDiff',
    summary: "A run's work as a unified diff (base commit → its commit), cut at 1 MiB",
    description: 'Empty when the run committed nothing, or the project is not a git repository. The branch and its commits stay after the worktree is removed, so the diff stays readable.',
    tag,
    params: RunIdParam,
    response: DiffOut,
    handler: ({ app, params }) => readDiff(app, params.runId),
  }),
  route({
    method: 'POST',
    path: `${item}/cancel`,
    operationId: 'cancelRun',
    errors: ['conflict'],
    summary: 'Cancel a run: its CLI gets its stdin closed, SIGTERM, and SIGKILL after 10 s',
    description:
      'Answers once the run has ended (at most about 15 s) when this daemon runs it; a run on another daemon is ended by it within a few seconds (run:finished). The task goes back to assigned and no new run starts for it until someone asks (POST /tasks/{taskId}/runs). A run that already ended: 409.',
    tag,
    params: RunIdParam,
    response: RunOut,
    handler: ({ app, params }) => runs.cancelRun(app, params.runId),
  }),
  route({
    method: 'POST',
    path: `${item}/resume`,
    operationId: 'resumeRun',
    errors: ['conflict'],
    summary: "Resume a paused run now: it is queued again to resume its CLI's session",
    description:
      "A run paused by its provider's usage limit or by a budget is queued again at once (run:resumed), whatever reset its CLI gave, and its provider's pause is lifted with it (runner:resumed): a person says the limit is gone. A budget still spent keeps it waiting (waitingFor says so) until the period rolls over or the limit is raised. A run that is not paused: 409.",
    tag,
    params: RunIdParam,
    response: RunOut,
    handler: async ({ app, params }) => await runs.resumeRun(app, params.runId),
  }),
  route({
    method: 'GET',
    path: `${base}/queue`,
    operationId: 'getRunQueue',
    summary: "Per agent: the runs it runs, the runs that wait and why; paused providers; the runner's slots",
    description:
      "What the board shows of the runner: each agent with a runtime is idle, running (which runs, on which tasks) or waiting, and each waiting run says what holds it (waitingFor: a retry's backoff, its provider paused until a time, a spent budget until its period ends, a person's resume, the agent's maxConcurrency, the runner's slots). A queued run waits for the first of these that holds.",
    tag,
    response: QueueOut,
    handler: async ({ app }) => await runs.readQueue(app),
  }),
  route({
    method: 'GET',
    path: '/api/v1/runners',
    operationId: 'listRunners',
    summary: 'The daemons that run agents: host, runtimes found, capacity, running, last seen',
    tag,
    response: z.array(RunnerOut),
    handler: ({ app }) => readRunners(app),
  }),
  route({
    method: 'GET',
    path: '/api/v1/runtimes',
    operationId: 'listRuntimes',
    summary: 'The agent CLIs this daemon finds on its PATH, with their versions (svc agents detect)',
    tag,
    response: z.array(RuntimeFoundOut),
    handler: ({ app }) => readRuntimes(app),
  }),
  route({
    method: 'GET',
    path: '/api/v1/usage',
    operationId: 'getUsage',
    summary: "Runs' token usage and cost, summed per agent, task, mission or day",
    description: 'Over the runs created in [since, until); costUsd sums what the CLIs reported (Claude Code reports a cost, Codex does not) and is null when none did.',
    tag,
    query: UsageQuery,
    response: z.array(UsageRowOut),
    handler: ({ app, query }) => runs.readUsage(app, query),
  }),
];
