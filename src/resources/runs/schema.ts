import { z } from 'zod';
import { IdCursor, PageLimit, Timestamp } from '../common.js';
import { RUNTIME_KINDS } from './types.js';

// Runs (DESIGN section 12): the API's shapes. A run is one process of an agent's CLI on one task.

export const RUN_STATUSES = ['queued', 'starting', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost', 'paused'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/** A run in one of these still holds (or waits for) its task: at most one per task. */
export const LIVE_STATUSES: readonly RunStatus[] = ['queued', 'starting', 'running', 'paused'];
export const FINISHED_STATUSES = ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'] as const;
export type FinishedStatus = (typeof FINISHED_STATUSES)[number];

export const RUN_REASONS = ['dispatch', 'manual', 'retry', 'revision', 'requeue'] as const;
export type RunReason = (typeof RUN_REASONS)[number];

export const RunStatus = z.enum(RUN_STATUSES);

export const UsageOut = z
  .object({
    inputTokens: z.int(),
    outputTokens: z.int(),
    cacheReadTokens: z.int(),
    cacheWriteTokens: z.int(),
    costUsd: z.number().nullable().describe('USD, where the CLI reports it (Claude Code does; Codex does not): null when unknown.'),
  })
  .meta({ id: 'RunUsage' });

export const DiffStatOut = z.object({ files: z.int(), added: z.int(), removed: z.int() }).meta({ id: 'RunDiffStat' });

export const PAUSE_REASONS = ['usage_limit', 'budget'] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];

/**
 * Why a queued or paused run waits (GET /runs, GET /runs/{id}, GET /runs/queue): the first thing
 * that holds it, in the order the runner looks (docs/runs.md, What a run waits for).
 */
export const HoldOut = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('backoff'), until: Timestamp }).describe("A retry's backoff, or the reset a paused run was told by its CLI."),
    z.object({ kind: z.literal('provider'), provider: z.string(), until: Timestamp }).describe("The agent's provider is paused by a usage limit until then."),
    z
      .object({ kind: z.literal('budget'), scope: z.enum(['project', 'agent']), agent: z.string().nullable(), period: z.enum(['day', 'week', 'month']), until: Timestamp })
      .describe('A budget of the agent (or the project) is spent until its period rolls over (or the limit is raised).'),
    z.object({ kind: z.literal('resume') }).describe('Paused, and runner.autoResume is false: it waits for svc runs resume (POST /api/v1/runs/{runId}/resume).'),
    z.object({ kind: z.literal('concurrency'), running: z.int(), limit: z.int() }).describe('The agent runs maxConcurrency runs already.'),
    z.object({ kind: z.literal('slots'), running: z.int(), capacity: z.int() }).describe("This daemon's runner is full (runner.maxConcurrentRuns; one at a time outside a git repository)."),
  ])
  .meta({ id: 'RunHold' });
export type Hold = z.output<typeof HoldOut>;

export const RunOut = z
  .object({
    id: z.string(),
    taskId: z.string(),
    missionId: z.string().nullable(),
    agent: z.string(),
    runtime: z.enum(RUNTIME_KINDS),
    attempt: z.int().describe("1 for a task's first run, then one more for each run after it (retries, revisions, runs started again)."),
    reason: z.enum(RUN_REASONS).describe('Why it was queued: dispatch (the task became ready), manual, retry, revision (review feedback), requeue (a lost run started again).'),
    status: RunStatus,
    notBefore: Timestamp.nullable().describe('A retry waits until then (backoff).'),
    runner: z.string().nullable().describe('The runner (daemon) that started it.'),
    pid: z.int().nullable().describe("The CLI's process id (the leader of the run's process group) while it runs."),
    workspace: z.string().nullable().describe("Where the CLI works: the task's git worktree, or the project itself when it is not a git repository."),
    branch: z.string().nullable(),
    baseCommit: z.string().nullable(),
    headCommit: z.string().nullable().describe("The commit of the run's work (null when it changed nothing or did not succeed)."),
    sessionId: z.string().nullable().describe("The CLI's session: a later run of the task resumes it."),
    startedAt: Timestamp.nullable(),
    finishedAt: Timestamp.nullable(),
    exitCode: z.int().nullable(),
    error: z.string().nullable(),
    turns: z.int(),
    usage: UsageOut,
    summary: z.string().nullable().describe("The agent's final message."),
    diffStat: DiffStatOut.nullable(),
    logItems: z.int().describe("Items in the run's log (GET /api/v1/runs/{runId}/log)."),
    pauseReason: z.enum(PAUSE_REASONS).nullable().describe("Why it is (or was last) paused: usage_limit (its provider's), budget; null when it never was."),
    waitingFor: HoldOut.nullable().describe('What a queued or paused run waits for now; null when nothing holds it (or it is not waiting).'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Run' });
export type Run = z.output<typeof RunOut>;

export const RunIdParam = z.strictObject({ runId: z.string().min(1).max(128) });

export const RunListQuery = z.strictObject({
  taskId: z.string().min(1).max(128).optional(),
  agent: z.string().min(1).max(64).optional(),
  status: RunStatus.optional(),
  limit: PageLimit,
  cursor: IdCursor,
});
export type RunListFilter = z.output<typeof RunListQuery>;

export const RunIn = z.strictObject({
  agent: z.string().min(1).max(64).optional().describe("The agent to run (it must have a runtime); default the task's assignee."),
  prompt: z.string().min(1).max(100_000).optional().describe("What to tell the agent, instead of the prompt built from the task (the task's title and description are still given)."),
});

export const LogQuery = z.strictObject({
  after: z.coerce.number().int().min(0).default(0).describe('Items after this seq (0: from the first).'),
  limit: z.coerce.number().int().min(1).max(1000).default(200).describe('How many, 1..1000 (default 200).'),
});

export const LogItemOut = z
  .looseObject({
    seq: z.int(),
    at: Timestamp,
    kind: z.enum(['text', 'thinking', 'tool_call', 'tool_result', 'command', 'file_change', 'usage', 'rate_limit', 'error', 'stderr', 'system', 'raw', 'truncated']),
  })
  .describe("One readable item of a run's log; the other fields depend on kind (docs/runs.md, The run log).")
  .meta({ id: 'RunLogItem' });

export const DiffOut = z.object({
  runId: z.string(),
  branch: z.string().nullable(),
  baseCommit: z.string().nullable(),
  headCommit: z.string().nullable(),
  diffStat: DiffStatOut.nullable(),
  patch: z.string().describe('The unified diff from baseCommit to headCommit, cut at 1 MiB.'),
  truncated: z.boolean(),
});

export const RunnerOut = z
  .object({
    id: z.string(),
    host: z.string(),
    pid: z.int(),
    labels: z.array(z.string()),
    runtimes: z.array(z.object({ kind: z.enum(RUNTIME_KINDS), path: z.string(), version: z.string().nullable() })),
    capacity: z.int().describe('Runs it starts at once at most.'),
    running: z.int(),
    online: z.boolean(),
    startedAt: Timestamp,
    lastSeenAt: Timestamp,
  })
  .meta({ id: 'Runner' });
export type Runner = z.output<typeof RunnerOut>;

export const RuntimeFoundOut = z.object({
  kind: z.enum(RUNTIME_KINDS),
  command: z.string(),
  path: z.string().nullable().describe('Where it was found, or null.'),
  version: z.string().nullable(),
  error: z.string().nullable().describe('Why it was not found or did not answer.'),
});

export const USAGE_GROUPS = ['agent', 'task', 'mission', 'day'] as const;
export const UsageQuery = z.strictObject({
  groupBy: z.enum(USAGE_GROUPS).default('agent'),
  since: Timestamp.optional().describe('Runs created at or after this time.'),
  until: Timestamp.optional().describe('Runs created before this time.'),
});
export type UsageFilter = z.output<typeof UsageQuery>;

export const UsageRowOut = z.object({
  key: z.string().nullable().describe('The agent, task id, mission id (null: runs of no mission) or day (UTC, YYYY-MM-DD).'),
  runs: z.int(),
  inputTokens: z.int(),
  outputTokens: z.int(),
  cacheReadTokens: z.int(),
  cacheWriteTokens: z.int(),
  costUsd: z.number().nullable().describe('Summed over the runs that reported a cost; null when none did.'),
});

const QueuedRunOut = z
  .object({
    runId: z.string(),
    taskId: z.string(),
    status: RunStatus,
    attempt: z.int(),
    startedAt: Timestamp.nullable(),
    waitingFor: HoldOut.nullable(),
  })
  .meta({ id: 'QueuedRun' });

export const QueueOut = z.object({
  slots: z.object({ running: z.int(), capacity: z.int() }).nullable().describe("This daemon's runner: runs it runs now and how many it may (null: it runs no agents)."),
  providers: z
    .array(z.object({ provider: z.string(), pausedUntil: Timestamp, runsWaiting: z.int() }))
    .describe('Providers whose runs are paused by a usage limit, until when, and how many runs wait for them.'),
  agents: z
    .array(
      z.object({
        agent: z.string(),
        provider: z.string().nullable().describe("Its runs' provider (from its model, else its runtime), or null."),
        maxConcurrency: z.int(),
        state: z.enum(['idle', 'running', 'waiting']).describe('running: it runs a run now; waiting: none runs, some wait (waitingFor says why); idle: nothing to do.'),
        heldBy: HoldOut.nullable().describe("What holds every new run of the agent now: its provider's pause or a spent budget."),
        running: z.array(QueuedRunOut).describe('Its starting and running runs.'),
        waiting: z.array(QueuedRunOut).describe('Its queued and paused runs, most urgent first, each with what it waits for.'),
      }),
    )
    .describe('Every agent with a runtime (and any other with live runs), by name.'),
});
