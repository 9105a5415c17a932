import { serviceKey, type App } from '../../app.js';
import { lockKey } from '../../db/open.js';
import { AppError, unprocessableField } from '../../kernel/errors.js';
import { uuidv7 } from '../../lib/ids.js';
import { nowIso } from '../../lib/time.js';
import { toPage, type Page } from '../common.js';
import { getAgent, listAgents } from '../agents/service.js';
import { latestFeedback } from '../approvals/service.js';
import { PRIORITIES } from '../tasks/schema.js';
import { getTask, openDependenciesOf, requireTask, updateTask } from '../tasks/service.js';
import { entryKeys } from '../vault/service.js';
import { findBinary, type BinaryLookup } from './drivers/detect.js';
import { driverFor } from './drivers/index.js';
import { vaultRefs, type Runtime } from '../agents/runtime.js';
import { liftPause } from '../providers/service.js';
import { Holds } from './holds.js';
import { LIVE_STATUSES, type Hold, type Run, type RunListFilter, type RunReason, type UsageFilter } from './schema.js';
import * as store from './store.js';
import type { RunLogItem } from './types.js';

// Runs as a resource: queueing, reading, cancelling, usage. What runs them is the runner
// (runner.ts, one per daemon); these functions only touch the state and its events.

/** The daemon's runner, as the routes need it (made by the daemon's resources part, started by its runner part; null when runner.enabled is false). */
export interface RunnerHandle {
  /** Ends a run this daemon runs (close stdin, SIGTERM, SIGKILL after 10 s); resolves once it ended. */
  cancel(runId: string): Promise<boolean>;
  /** Looks at the queue now (a run was queued, a slot freed). */
  kick(): void;
  /** This runner's slots: runs it runs now, and how many it may. */
  slots(): { running: number; capacity: number };
  /** A run here waits on svc (a permission request): its silence is no stall until released. */
  holdStall(runId: string): () => void;
}
export const RUNNER = serviceKey<RunnerHandle | null>('runs.runner');

/**
 * Checks that a runtime can run on this daemon (its executable found, 422 naming it and where it
 * was looked for) and that every vault reference of its env names a key of this agent's entries
 * (422 naming agent, service and key). The agents resource calls it through RUNTIME_CHECK.
 */
export async function checkRuntime(app: App, agent: string, runtime: Runtime, path: string): Promise<void> {
  const found = await findRuntime(app, runtime);
  if (found.path === null) {
    const what = runtime.kind === 'command' ? 'the program' : `the ${runtime.kind === 'claude' ? 'Claude Code' : 'Codex'} CLI`;
    throw unprocessableField(`${path}.command`, `${found.error}; install ${what} or give its path as runtime.command`);
  }
  for (const [variable, ref] of vaultRefs(runtime)) {
    const keys = await entryKeys(app, agent, ref.vault);
    const at = `${path}.env.${variable}`;
    if (!keys) throw unprocessableField(at, `agent "${agent}" has no vault entry for service "${ref.vault}"; save it first (svc vault set ${agent} ${ref.vault} …)`);
    if (!keys.includes(ref.key)) throw unprocessableField(at, `agent "${agent}"'s vault entry "${ref.vault}" has no key "${ref.key}" (it has: ${keys.join(', ') || 'none'})`);
  }
}

/** A runtime's executable on this daemon's PATH (or its path), or where it was looked for. */
export function findRuntime(app: App, runtime: Pick<Runtime, 'kind' | 'command'>): Promise<BinaryLookup> {
  const name = runtime.command ?? driverFor(runtime.kind).defaultCommand;
  if (!name) return Promise.resolve({ path: null, looked: [], error: `a runtime of kind ${runtime.kind} names its program in runtime.command` });
  return findBinary(name, { PATH: app.env.PATH, cwd: app.root });
}

/** Higher runs first: urgent 3 … low 0. */
const rankOf = (priority: string): number => Math.max(0, PRIORITIES.indexOf(priority as (typeof PRIORITIES)[number]));

export interface QueueOptions {
  agent?: string;
  prompt?: string | null;
  reason: RunReason;
  /** A retry waits for its backoff. */
  notBefore?: string | null;
}

/**
 * Queues a run of the task inside the caller's write() (or its own), with its run:queued event.
 * Returns null when the task already has a live run (whoever queued it: two daemons may try).
 */
export async function queueRun(app: App, taskId: string, o: QueueOptions): Promise<Run | null> {
  return await app.events.write(async () => {
    const task = await requireTask(app, taskId);
    const agentName = o.agent ?? task.assignTo;
    if (!agentName) throw unprocessableField('body.agent', `task ${taskId} has no assignee; assign it to an agent with a runtime, or name one as agent`);
    const agent = await getAgent(app.db, agentName);
    if (!agent) throw unprocessableField('body.agent', `agent "${agentName}" does not exist`);
    if (!agent.runtime) throw unprocessableField('body.agent', `agent "${agentName}" has no runtime, so svc cannot run it; set one (svc agents edit ${agentName} --runtime claude|codex|command)`);
    const attempt = (await store.countRunsOfTask(app.db, taskId)) + 1;
    const id = uuidv7(app.clock.now());
    const inserted = await store.insertRun(app.db, {
      id,
      taskId,
      missionId: task.missionId,
      agent: agentName,
      runtime: agent.runtime.kind,
      attempt,
      revision: task.revisionCount,
      reason: o.reason,
      prompt: o.prompt ?? null,
      priorityRank: rankOf(task.priority),
      notBefore: o.notBefore ?? null,
      resumeSessionId: attempt > 1 ? await store.latestSession(app.db, taskId, agentName, agent.runtime.kind) : null,
      now: nowIso(app.clock),
    });
    if (!inserted) return null;
    app.events.emit('run:queued', { runId: id, taskId, agent: agentName, attempt, reason: o.reason });
    return (await withHolds(app, [(await store.getRun(app.db, id))!]))[0]!;
  });
}

/**
 * POST /tasks/{taskId}/runs: a run started by hand. The task must be one a run can take (pending,
 * assigned, or failed with a retry left); naming another agent than the assignee reassigns it.
 */
export async function startRunByHand(app: App, taskId: string, body: { agent?: string; prompt?: string }): Promise<Run> {
  return await app.events.write(async () => {
    const task = await requireTask(app, taskId);
    const live = await store.liveRunOfTask(app.db, taskId);
    if (live?.status === 'paused') throw new AppError('conflict', `Task ${taskId} has a paused run (${live.id}); resume it (POST /api/v1/runs/${live.id}/resume) or cancel it first.`);
    if (live) throw new AppError('conflict', `Task ${taskId} already has a ${live.status} run (${live.id}); cancel it first (POST /api/v1/runs/${live.id}/cancel).`);
    if (!['pending', 'assigned', 'failed'].includes(task.status)) {
      throw new AppError('conflict', `Task ${taskId} is ${task.status}; a run can start only on a pending, assigned or failed task.`);
    }
    if (task.status === 'failed' && task.retries >= task.maxRetries) {
      throw new AppError('conflict', `Task ${taskId} has used ${task.retries} of its ${task.maxRetries} retries; raise maxRetries (PATCH the task) to run it again.`);
    }
    if (!body.agent && !task.assignTo) throw unprocessableField('body.agent', `task ${taskId} has no assignee; name the agent to run`);
    if (body.agent && body.agent !== task.assignTo) {
      if (!(await getAgent(app.db, body.agent))) throw unprocessableField('body.agent', `agent "${body.agent}" does not exist`);
      if (task.status !== 'failed') await updateTask(app, taskId, { assignTo: body.agent });
    }
    const run = await queueRun(app, taskId, { agent: body.agent, prompt: body.prompt ?? null, reason: 'manual' });
    // The live check above ran in this transaction: nothing else can have queued one since.
    return run!;
  });
}

/**
 * Whether the task should get a run on its own (DESIGN 12, dispatch) and, if so, queues it: a task
 * assigned to an agent with a runtime and autoRun, pending or assigned, dependencies done, no live
 * run, and not held: a cancelled run holds its task until someone asks again (a new review
 * round counts as asking). Returns the run queued, or null.
 */
export async function dispatchTask(app: App, taskId: string): Promise<Run | null> {
  return await app.events.write(async () => {
    const task = await getTask(app, taskId);
    if (!task?.assignTo || (task.status !== 'pending' && task.status !== 'assigned')) return null;
    const agent = await getAgent(app.db, task.assignTo);
    if (!agent?.runtime || agent.runtime.autoRun === false) return null;
    if ((await openDependenciesOf(app, taskId)).length) return null;
    if (await store.liveRunOfTask(app.db, taskId)) return null;
    const latest = await store.latestRunOfTask(app.db, taskId);
    const revised = latest !== null && task.revisionCount > latest.revision;
    if (latest?.status === 'cancelled' && !revised) return null;
    return await queueRun(app, taskId, { reason: revised ? 'revision' : 'dispatch', prompt: revised ? await latestFeedback(app, taskId) : null });
  });
}

export const getRun = async (app: App, id: string): Promise<store.RunRecord | null> => await store.getRun(app.db, id);

/** This daemon's slots, or null when it runs no agents. */
const slotsOf = (app: App) => app.services.get(RUNNER)?.slots() ?? null;

/** Runs as the API answers them: each queued or paused one with what it waits for (holds.ts). */
export async function withHolds(app: App, runs: store.RunRecord[]): Promise<Run[]> {
  if (!runs.some((r) => r.status === 'queued' || r.status === 'paused')) return runs.map((r) => store.publicRun(r));
  const holds = await Holds.read(app);
  const slots = slotsOf(app);
  return Promise.all(runs.map(async (r) => store.publicRun(r, await holds.explain(r, slots))));
}

export async function readRun(app: App, id: string): Promise<Run> {
  const run = await store.readRun(app.db, id);
  if (!run) throw new AppError('not_found', `Run "${id}" not found.`);
  return (await withHolds(app, [run]))[0]!;
}

export async function readRunPage(app: App, q: RunListFilter): Promise<Page<Run>> {
  const rows = await store.readRuns(app.db, { taskId: q.taskId, agent: q.agent, status: q.status, before: q.cursor, limit: q.limit + 1 });
  return toPage(await withHolds(app, rows), q.limit, (r) => r.id);
}

/** readRunPage for the agent tools (synchronous). */
export async function listRuns(app: App, q: RunListFilter): Promise<Page<Run>> {
  const rows = await store.listRuns(app.db, { taskId: q.taskId, agent: q.agent, status: q.status, before: q.cursor, limit: q.limit + 1 });
  return toPage(await withHolds(app, rows), q.limit, (r) => r.id);
}

export async function requireRun(app: App, id: string): Promise<Run> {
  // In a write: what the caller checks and then writes stays as read until it commits (lockKey).
  await lockKey(app.db, 'run', id);
  const run = await store.getRun(app.db, id);
  if (!run) throw new AppError('not_found', `Run "${id}" not found.`);
  return (await withHolds(app, [run]))[0]!;
}

/** Queued and paused runs per provider that is paused now (GET /api/v1/auth/status, runner:paused). */
export async function waitingRunsByProvider(app: App, now = app.clock.now()): Promise<Map<string, number>> {
  const holds = await Holds.read(app, now);
  const paused = holds.pausedNow();
  return new Map([...(await holds.waitingByProvider())].filter(([p]) => paused.has(p)));
}

/**
 * POST /runs/{runId}/resume: a paused run is queued again now to resume its session, whatever
 * reset its CLI gave; its provider's pause is lifted with it (a person knows the limit is gone:
 * runner:resumed). A budget still spent holds it (waitingFor says so). Not paused: 409.
 */
export async function resumeRun(app: App, runId: string): Promise<Run> {
  return await app.events.write(async () => {
    await lockKey(app.db, 'run', runId);
    const run = await store.getRun(app.db, runId);
    if (!run) throw new AppError('not_found', `Run "${runId}" not found.`);
    if (run.status !== 'paused') throw new AppError('conflict', `Run ${runId} is ${run.status}, not paused; only a paused run can be resumed.`);
    await store.unpauseRun(app.db, runId, nowIso(app.clock));
    app.events.emit('run:resumed', { runId, taskId: run.taskId, agent: run.agent, by: 'person' });
    const holds = await Holds.read(app);
    const provider = run.pauseReason === 'usage_limit' ? await holds.providerOfAgent(run.agent) : null;
    if (provider && holds.pausedNow().has(provider) && (await liftPause(app, provider))) {
      app.events.emit('runner:resumed', { provider, runs: (await holds.waitingByProvider()).get(provider) ?? 0, by: 'person' });
    }
    return (await withHolds(app, [(await store.getRun(app.db, runId))!]))[0]!;
  });
}

/** GET /api/v1/runs/queue: per agent with a runtime, what runs and what waits, and why. */
export async function readQueue(app: App) {
  const holds = await Holds.read(app);
  const slots = slotsOf(app);
  const live = await store.liveRuns(app.db, 1000);
  const byAgent = new Map<string, { running: Run[]; waiting: Run[] }>();
  for (const r of live) {
    const entry = byAgent.get(r.agent) ?? { running: [], waiting: [] };
    byAgent.set(r.agent, entry);
    const run = store.publicRun(r, await holds.explain(r, slots));
    (r.status === 'queued' || r.status === 'paused' ? entry.waiting : entry.running).push(run);
  }
  const names = new Set([...(await listAgents(app.db)).filter((a) => a.runtime).map((a) => a.name), ...byAgent.keys()]);
  const paused = holds.pausedNow();
  const iso = (t: number) => new Date(t).toISOString();
  const brief = (r: Run) => ({ runId: r.id, taskId: r.taskId, status: r.status, attempt: r.attempt, startedAt: r.startedAt, waitingFor: r.waitingFor });
  return {
    slots,
    providers: await Promise.all([...paused].map(async ([provider, until]) => ({ provider, pausedUntil: iso(until), runsWaiting: (await holds.waitingByProvider()).get(provider) ?? 0 }))),
    agents: await Promise.all(
      [...names].sort().map(async (name) => {
        const a = await holds.agent(name);
        const { running, waiting } = byAgent.get(name) ?? { running: [], waiting: [] };
        const held: Hold | null = a?.runtime ? await holds.blocking(name) : null;
        const state: 'idle' | 'running' | 'waiting' = running.length ? 'running' : waiting.length ? 'waiting' : 'idle';
        return {
          agent: name,
          provider: await holds.providerOfAgent(name),
          maxConcurrency: a?.maxConcurrency ?? 1,
          state,
          heldBy: held,
          running: running.map(brief),
          waiting: waiting.map(brief),
        };
      }),
    ),
  };
}

export type LogEntry = { seq: number; at: string } & (RunLogItem | { kind: 'truncated'; dropped: number });

export async function readRunLog(app: App, runId: string, after: number, limit: number): Promise<LogEntry[]> {
  await readRun(app, runId);
  const rows = await store.readLog(app.db, runId, after, limit);
  return rows.map((r) => ({ seq: Number(r.seq), at: r.at, ...(JSON.parse(r.data) as RunLogItem) }));
}

/**
 * POST /runs/{runId}/cancel. A queued run is cancelled at once; a live one is ended by the runner
 * that runs it (this daemon: awaited; another: it sees the request within a second and ends it).
 * A finished run: 409.
 */
export async function cancelRun(app: App, runId: string): Promise<Run> {
  const run = await store.getRun(app.db, runId);
  if (!run) throw new AppError('not_found', `Run "${runId}" not found.`);
  if (!LIVE_STATUSES.includes(run.status)) throw new AppError('conflict', `Run ${runId} already ended (${run.status}); only a queued, starting, running or paused run can be cancelled.`);
  const runner = app.services.get(RUNNER);
  if (run.status === 'queued' || run.status === 'paused') {
    const done = await app.events.write(async () => {
      await lockKey(app.db, 'run', runId);
      const fresh = (await store.getRun(app.db, runId))!;
      if (fresh.status !== 'queued' && fresh.status !== 'paused') return false;
      await store.finishRun(app.db, runId, { status: 'cancelled', exitCode: null, error: 'cancelled before it started', summary: null, headCommit: null, diffStat: null, now: nowIso(app.clock) });
      app.events.emit('run:finished', { runId, taskId: run.taskId, agent: run.agent, status: 'cancelled', exitCode: null, error: 'cancelled before it started', headCommit: null, usage: run.usage });
      return true;
    });
    if (done) return readRun(app, runId);
  }
  await app.events.write(async () => await store.requestCancel(app.db, runId, nowIso(app.clock)));
  if (runner) await runner.cancel(runId);
  return readRun(app, runId);
}

export async function readUsage(app: App, q: UsageFilter) {
  const rows = await store.readUsage(app.db, q);
  return rows.map((r) => ({
    key: r.key,
    runs: r.runs,
    inputTokens: r.input,
    outputTokens: r.output,
    cacheReadTokens: r.cacheRead,
    cacheWriteTokens: r.cacheWrite,
    costUsd: store.costOf(r.costMicros),
  }));
}
