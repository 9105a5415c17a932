import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { App } from '../../app.js';
import type { ProjectConfig } from '../../config/schema.js';
import { AppError } from '../../kernel/errors.js';
import { errorFields } from '../../kernel/log.js';
import { redactValue } from '../../lib/redact.js';
import { nowIso } from '../../lib/time.js';
import type { Runtime } from '../agents/runtime.js';
import type { Agent } from '../agents/schema.js';
import { getAgent } from '../agents/service.js';
import { budgetHold, noteSpend } from '../budgets/service.js';
import { afterUsageLimit, HEALTHY } from '../providers/health.js';
import { pauseProvider, providerServed } from '../providers/service.js';
import { skillIndex } from '../skills/live-index.js';
import { getTask, heartbeatTask, releaseClaim, transitionTask } from '../tasks/service.js';
import type { BinaryLookup } from './drivers/detect.js';
import { driverFor } from './drivers/index.js';
import { runEnvironment, VaultRefError } from './env.js';
import { Holds, providerOf } from './holds.js';
import type { RunKeys } from './keys.js';
import { promptFor, taskHistory } from './prompt.js';
import { eventItem, RunLogBuffer, type Numbered } from './run-log.js';
import type { FinishedStatus, PauseReason } from './schema.js';
import { queueRun } from './service.js';
import * as store from './store.js';
import { supervise } from './supervisor.js';
import type { DiffStat, Driver, ProcessExit, RunAgent, RunLogItem, StreamParser, StreamState, Supervised, Usage } from './types.js';
import type { GitTurn } from './git.js';
import type { SparePool } from './spares.js';
import * as git from './workspace.js';

// One run, from its claim to its end: the worktree, the environment and the prompt, the CLI's
// process under the supervisor, its stream read into the run log (in batches), heartbeats on the
// task's claim, and at the end the commit, the run's record and what happens to its task. The
// runner (runner.ts) decides which runs start; this is what a started run does. A run may also
// pause instead of ending (its provider's usage limit, its budget spent): its process ends, its
// task is released, and the same run is queued again later to resume the session.

/** A run's log is written this often at most (one transaction and one run:activity event each)... */
const FLUSH_MS = 100;
/** ...or as soon as this many items wait. */
const FLUSH_ITEMS = 500;
/** Between SIGTERM and SIGKILL of a run's process group. */
export const KILL_GRACE_MS = 10_000;
/** A stdout line longer than this is cut. */
const MAX_LINE_BYTES = 1024 * 1024;

/** Retry backoff: 10 s × 2^n, at most 5 min (Symphony's). */
export const retryDelayMs = (retriesUsed: number): number => Math.min(10_000 * 2 ** retriesUsed, 300_000);

/** Two usages together (a paused run's earlier process and this one). */
export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    costUsd: a.costUsd === null && b.costUsd === null ? null : (a.costUsd ?? 0) + (b.costUsd ?? 0),
  };
}

/** A run's own usage: the stream's, less what earlier runs of a resumed session counted. */
export function runUsage(stream: Usage, base: Usage | null): Usage {
  if (!base) return stream;
  const minus = (a: number, b: number) => Math.max(0, a - b);
  return {
    inputTokens: minus(stream.inputTokens, base.inputTokens),
    outputTokens: minus(stream.outputTokens, base.outputTokens),
    cacheReadTokens: minus(stream.cacheReadTokens, base.cacheReadTokens),
    cacheWriteTokens: minus(stream.cacheWriteTokens, base.cacheWriteTokens),
    costUsd: stream.costUsd === null ? null : Math.max(0, stream.costUsd - (base.costUsd ?? 0)),
  };
}

/** What a run needs of its runner. */
export interface RunContext {
  runnerId: string;
  /** The project is a git repository with a commit: each task gets a worktree. */
  gitRoot: boolean;
  /** The daemon's URL (SVC_URL, and the CLI's MCP server at /mcp). */
  url(): string;
  keys: RunKeys;
  config(): ProjectConfig['runner'];
  /** The spare worktrees a new task's worktree is made from (null: none, the project is no git repository). */
  spares: SparePool | null;
  /** What git work after the spawn waits for (no dispatch under way: dispatch-gate.ts). */
  turn: GitTurn;
  /** The runtime's executable (the runner keeps recent lookups). */
  runtimePath(runtime: Runtime): Promise<BinaryLookup>;
}

export class LiveRun {
  readonly id: string;
  readonly taskId: string;
  readonly agent: string;
  /** Resolves once the run has ended and everything it held is let go. */
  readonly ended: Promise<void>;
  /** Resolves once its process was spawned and the run marked started, or the run ended without one. */
  readonly spawned: Promise<void>;
  private markSpawned: () => void = () => {};
  private process: Supervised | null = null;
  private parser: StreamParser | null = null;
  private readonly log: RunLogBuffer;
  private flushTimer: NodeJS.Timeout | null = null;
  private heartbeat: unknown = null;
  private secrets: string[] = [];
  /** Why the runner ended it, when it did (a cancel, the task moving away, the daemon stopping, its budget spent). */
  private endedBy: { status: 'cancelled' | 'lost' | 'paused'; error: string | null; paused?: PauseReason } | null = null;
  /** The worktree (path), where the CLI works in it (cwd: the project's folder inside the repository), its branch and base. */
  private workspace: { path: string; cwd: string; branch: string | null; baseCommit: string | null };
  private runDir: string | null = null;
  /** Usage the stream counts that belongs to earlier runs of a resumed session (Codex), taken off. */
  private usageBase: Usage | null = null;
  /** What earlier processes of this run counted (it was paused, and resumes): added to this one's. */
  private readonly carried: { usage: Usage; turns: number };
  /** The CLI's last stderr line: what a failure without a message of its own says. */
  private lastStderr: string | null = null;
  /** The CLI said the session it was to resume does not exist (driver.sessionMissing). */
  private sessionGone = false;
  /** Its budget is spent: the run stops as soon as the CLI is idle (between two model calls). */
  private stopWhenIdle = false;
  /** The usage the budgets were last looked at for (they are looked at again when it changes). */
  private notedUsage = '';
  /** finish() began: what the run ends as is decided. */
  private finishing = false;
  private done = false;

  constructor(
    private readonly app: App,
    private readonly ctx: RunContext,
    private readonly run: store.RunRecord,
    private readonly leaseId: string,
    private readonly agentRecord: Agent,
    private readonly runtime: Runtime,
  ) {
    this.id = run.id;
    this.taskId = run.taskId;
    this.agent = run.agent;
    this.log = new RunLogBuffer(ctx.config().maxLogItems, run.logItems);
    this.carried = { usage: run.usage, turns: run.turns };
    this.workspace = { path: app.root, cwd: app.root, branch: null, baseCommit: null };
    this.heartbeatLater();
    this.spawned = new Promise((resolve) => (this.markSpawned = resolve));
    this.ended = this.spawn()
      // Spawned, or never to be (it failed or threw before): the dispatch is over either way.
      .finally(() => this.markSpawned())
      .then((exit) => this.finish(exit))
      .catch((err) => app.log.error('ending a run failed', { runId: run.id, ...errorFields(err) }))
      .finally(() => this.cleanUp());
  }

  /** Its CLI waits on svc (a permission request): no stall until the release is called. */
  holdStall(): () => void {
    return this.process?.hold() ?? (() => {});
  }

  /** Ends the run: as cancelled (a person asked, or its task moved away), or lost (the daemon stops, or the run runs elsewhere now). */
  async end(status: 'cancelled' | 'lost', error: string): Promise<void> {
    this.endedBy ??= { status, error };
    await this.process?.cancel();
    await this.ended;
  }

  /**
   * Prepares the workspace and the prompt, then spawns the CLI; resolves with how it ended. A
   * session that cannot be resumed (the CLI says so) is replaced by a fresh one whose prompt
   * carries the task's history.
   */
  private async spawn(): Promise<ProcessExit> {
    const { app, run, runtime } = this;
    const config = this.ctx.config();
    const fail = (error: string): ProcessExit => ({ code: null, signal: null, reason: 'spawn_failed', error });
    // Asked together: each wait is a turn of the event loop, where other work may come first.
    const [task, command] = await Promise.all([getTask(app, run.taskId), this.ctx.runtimePath(runtime)]);
    if (!task) return fail('the task was removed');
    const driver = driverFor(runtime.kind);
    if (command.path === null) return fail(command.error);

    if (this.ctx.gitRoot) {
      try {
        const ws = await git.ensureWorktree({
          root: app.root,
          dir: git.worktreeDir(app.root, run.taskId),
          branch: git.branchName(run.agent, run.taskId),
          baseRef: config.baseRef ?? 'HEAD',
          fromBranch: await this.dependencyBranch(task.dependsOn),
          spares: this.ctx.spares,
        });
        this.workspace = { path: ws.path, cwd: ws.cwd, branch: ws.branch, baseCommit: ws.baseCommit };
      } catch (err) {
        return fail(`could not prepare the task's git worktree: ${(err as Error).message}`);
      }
    }
    if (this.endedBy) return { code: null, signal: null, reason: 'cancelled', error: null };

    const key = this.ctx.keys.mint(run.id, run.agent);
    const runDir = join(app.stateDir, 'runs', run.id);
    mkdirSync(runDir, { recursive: true, mode: 0o700 });
    this.runDir = runDir;
    let prompt: string;
    try {
      prompt = await promptFor(app, run, task, this.workspace.branch, config.promptFile);
    } catch (err) {
      return fail((err as Error).message);
    }
    const exit = await this.launch(driver, command.path, key, prompt, run.resumeSessionId);
    if (!run.resumeSessionId || this.endedBy || !this.sessionMissing(driver, exit)) return exit;

    // The CLI has no such session (Claude Code's "No conversation found": one killed a moment after
    // it began may not have been saved): a fresh one, told what happened so far.
    await this.take([{ kind: 'system', text: `the CLI could not resume session ${run.resumeSessionId}; starting a fresh session with the task's history in the prompt` }]);
    await app.events.write(async () => await store.forgetResume(app.db, run.id, nowIso(app.clock)));
    try {
      prompt = await promptFor(app, run, task, this.workspace.branch, config.promptFile, { history: await taskHistory(app, run.taskId, run.id) });
    } catch (err) {
      return fail((err as Error).message);
    }
    return this.launch(driver, command.path, key, prompt, null);
  }

  /** Whether the CLI ended because the session it was to resume does not exist. */
  private sessionMissing(driver: Driver, exit: ProcessExit): boolean {
    if (exit.reason !== 'exited' || exit.code === 0) return false;
    const error = this.parser?.state().error;
    return this.sessionGone || (error !== null && error !== undefined && driver.sessionMissing.test(error));
  }

  /** Builds the CLI's invocation and environment and starts it under the supervisor. */
  private async launch(driver: Driver, commandPath: string, key: string, prompt: string, resumeSessionId: string | null): Promise<ProcessExit> {
    const { app, run, runtime } = this;
    const config = this.ctx.config();
    const fail = (error: string): ProcessExit => ({ code: null, signal: null, reason: 'spawn_failed', error });
    const invocation = driver.build({
      runId: run.id,
      taskId: run.taskId,
      agent: this.runAgent(),
      runtime: {
        kind: runtime.kind,
        command: commandPath,
        args: runtime.args ?? [],
        permissionMode: runtime.permissionMode ?? 'acceptEdits',
        permissionTimeoutSec: config.permissionTimeoutSec,
      },
      cwd: this.workspace.cwd,
      prompt,
      resumeSessionId,
      mcp: { url: `${this.ctx.url()}/mcp`, key },
      runDir: this.runDir!,
    });
    let env: Record<string, string>;
    try {
      const built = await runEnvironment(app, run.agent, runtime, invocation.env, { url: this.ctx.url(), key, taskId: run.taskId, runId: run.id, agent: run.agent });
      env = built.env;
      this.secrets = built.secrets;
    } catch (err) {
      if (err instanceof VaultRefError) return fail(err.message);
      throw err;
    }
    for (const f of invocation.files) {
      mkdirSync(dirname(f.path), { recursive: true, mode: 0o700 });
      writeFileSync(f.path, f.content, { mode: 0o600 });
    }
    const parser = driver.parser({ cwd: this.workspace.cwd, clock: app.clock });
    this.usageBase = driver.resumedUsage === 'session-total' && resumeSessionId ? await store.sessionUsage(app.db, resumeSessionId) : null;
    this.parser = parser;
    this.sessionGone = false;
    this.lastStderr = null;
    const proc = supervise(
      {
        command: invocation.command,
        args: invocation.args,
        cwd: this.workspace.cwd,
        env,
        stdin: invocation.stdin,
        nice: config.nice,
        stallMs: config.stallTimeoutSec * 1000,
        timeoutMs: config.timeoutSec * 1000,
        killGraceMs: KILL_GRACE_MS,
        maxLineBytes: MAX_LINE_BYTES,
        onStdoutLine: async (line) => await this.take(parser.line(line)),
        onStderrLine: async (line) => {
          if (line.trim()) this.lastStderr = line.slice(0, 500);
          if (resumeSessionId && driver.sessionMissing.test(line)) this.sessionGone = true;
          await this.take([{ kind: 'stderr', text: line }]);
        },
      },
      app.clock,
    );
    this.process = proc;
    if (proc.pid !== null) {
      const pid = proc.pid;
      await app.events.write(async () => {
        await store.setStarted(app.db, run.id, {
          pid,
          pidStart: proc.startTime,
          workspace: this.workspace.path,
          branch: this.workspace.branch,
          baseCommit: this.workspace.baseCommit,
          now: nowIso(app.clock),
        });
        app.events.emit('run:started', { runId: run.id, taskId: run.taskId, agent: run.agent, runner: this.ctx.runnerId, pid, branch: this.workspace.branch });
      });
    }
    this.markSpawned();
    if (this.endedBy) void proc.cancel();
    return proc.exited;
  }

  /** The branch of the task's single dependency's latest run, to build on its work. */
  private async dependencyBranch(deps: string[]): Promise<string | null> {
    if (deps.length !== 1) return null;
    return (await store.latestRunOfTask(this.app.db, deps[0]!))?.branch ?? null;
  }

  private runAgent(): RunAgent {
    const { app, agentRecord: agent } = this;
    const index = skillIndex(app);
    return {
      name: agent.name,
      model: agent.model,
      systemPrompt: agent.systemPrompt,
      maxTurns: agent.maxTurns,
      allowedTools: agent.allowedTools,
      allowedPaths: agent.allowedPaths.map((p) => resolve(app.root, p)),
      reasoning: agent.reasoning,
      displayName: agent.identity?.displayName ?? null,
      email: agent.identity?.email ?? null,
      skills: agent.skills.flatMap((name) => {
        const s = index.get(name);
        return s && !('error' in s && s.error) ? [{ name, dir: s.dir }] : [];
      }),
    };
  }

  // --- while it runs

  private async take(items: RunLogItem[]): Promise<void> {
    const at = nowIso(this.app.clock);
    for (const item of items) this.log.push(redactValue(item, this.secrets), at);
    if (this.log.size >= FLUSH_ITEMS) await this.flush();
    else this.flushLater();
    this.stopIfIdle();
  }

  /** Over its budget, the run stops once its CLI is between two model calls: its turn is done, its session resumes cleanly. */
  private stopIfIdle(): void {
    if (!this.stopWhenIdle || this.endedBy || this.finishing || !this.parser?.state().idle) return;
    this.endedBy = { status: 'paused', error: null, paused: 'budget' };
    void this.process?.cancel();
  }

  /** Batching, not a deadline: on the real clock whatever clock the daemon keeps (a test's fake one included). */
  private flushLater(): void {
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      void this.flush();
    }, FLUSH_MS).unref();
  }

  /**
   * Writes the log items that wait, the run's progress and one run:activity event, in one
   * transaction. One write at a time, in the order asked: items are taken when the previous write
   * is done, so the log and its run:activity events keep the order the CLI wrote them in.
   */
  private flush(closing: Numbered | null = null): Promise<void> {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    const next = this.writing.then(() => this.writeLog(closing));
    this.writing = next;
    return next;
  }

  /** The log write under way (never rejects: a failed one is logged). */
  private writing: Promise<void> = Promise.resolve();

  private async writeLog(closing: Numbered | null): Promise<void> {
    const { app } = this;
    const items = this.log.take();
    if (closing) items.push(closing);
    const state = this.parser?.state();
    if (!items.length && !state) return;
    try {
      await app.events.write(async () => {
        if (items.length) await store.insertLog(app.db, this.id, items);
        let progress: { turns: number; usage: Usage } | object = {};
        if (state) {
          const usage = addUsage(this.carried.usage, runUsage(state.usage, this.usageBase));
          progress = { turns: this.carried.turns + state.turns, usage };
          await store.setProgress(app.db, this.id, {
            turns: this.carried.turns + state.turns,
            usage,
            sessionId: state.sessionId,
            logCount: this.log.count,
            logDropped: this.log.droppedCount,
            now: nowIso(app.clock),
          });
          await this.noteSpend(usage);
        }
        if (items.length) app.events.emit('run:activity', { runId: this.id, taskId: this.taskId, agent: this.agent, fromSeq: items[0]!.seq, items: items.map(eventItem), ...progress });
      });
    } catch (err) {
      app.log.error("writing a run's log failed; those items are lost", { runId: this.id, items: items.length, ...errorFields(err) });
    }
    this.stopIfIdle();
  }

  /** The run's usage moved: its budgets are looked at (warning and exceeded said once); one spent stops it after its turn. */
  private async noteSpend(usage: Usage): Promise<void> {
    const seen = JSON.stringify(usage);
    if (seen === this.notedUsage) return;
    this.notedUsage = seen;
    if ((await noteSpend(this.app, this.agent)).length && !this.finishing) this.stopWhenIdle = true;
  }

  /** Keeps the task's claim alive while the run lives. */
  private heartbeatLater(): void {
    const { app } = this;
    const every = Math.min(60_000, (app.config().tasks.leaseSeconds * 1000) / 3);
    const beat = async () => {
      this.heartbeat = null;
      if (this.done) return;
      try {
        await heartbeatTask(app, this.taskId, this.leaseId);
      } catch (err) {
        if (!(err instanceof AppError)) app.log.error('heartbeat of a run failed', { runId: this.id, ...errorFields(err) });
        else app.log.warn("a run's task claim is gone; the run goes on until it ends", { runId: this.id, error: err.message });
      }
      if (!this.done) this.heartbeatLater();
    };
    this.heartbeat = app.clock.setTimeout(() => void beat(), every);
  }

  // --- the end

  /** How the run ended, from who ended it, the supervisor's exit and what the CLI's stream said. */
  private outcome(exit: ProcessExit): { status: FinishedStatus | 'paused'; error: string | null; paused?: PauseReason } {
    const config = this.ctx.config();
    const state = this.parser?.state() ?? null;
    if (this.endedBy) return this.endedBy;
    switch (exit.reason) {
      case 'stalled':
        return { status: 'timed_out', error: `no output for ${config.stallTimeoutSec} s (runner.stallTimeoutSec)` };
      case 'timed_out':
        return { status: 'timed_out', error: `ran longer than ${config.timeoutSec} s (runner.timeoutSec)` };
      case 'cancelled':
        return { status: 'cancelled', error: 'cancelled' };
      case 'spawn_failed':
        return { status: 'failed', error: exit.error ?? 'the CLI could not be started' };
    }
    if (exit.code === 0 && state?.succeeded !== false) return { status: 'succeeded', error: null };
    // A usage limit is not the run's failure: it waits for the reset and resumes, counting no retry.
    if (state?.usageLimit) return { status: 'paused', error: null, paused: 'usage_limit' };
    const said = state?.error ?? (exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`) + (this.lastStderr ? `: ${this.lastStderr}` : '');
    return { status: 'failed', error: said };
  }

  private async finish(exit: ProcessExit): Promise<void> {
    const { app, run } = this;
    this.finishing = true;
    const state = this.parser?.state() ?? null;
    const end = this.outcome(exit);
    if (end.status === 'paused') return await this.pause(exit, state, end.paused!);
    let { status, error } = end as { status: FinishedStatus; error: string | null };
    let headCommit: string | null = null;
    let diffStat: DiffStat | null = null;
    if (status === 'succeeded' && this.workspace.branch && this.workspace.baseCommit) {
      // The commit and its diff are one piece of git work, in its turn (dispatches first).
      const endTurn = await this.ctx.turn();
      try {
        const identity = (await getAgent(app.db, run.agent))?.identity ?? null;
        const committed = await git.commitAll({
          path: this.workspace.path,
          author: { name: identity?.displayName ?? `${run.agent} (svc)`, email: identity?.email ?? `${run.agent}@svc.invalid` },
          message: `${(await getTask(app, run.taskId))?.title ?? run.taskId}\n\n${redactValue((state?.summary ?? '').slice(0, 4000), this.secrets)}`.trim(),
          trailers: { 'Svc-Task': run.taskId, 'Svc-Run': run.id },
        });
        // The agent may have committed on its own: its work is everything from the base to the head.
        diffStat = await git.diffStat({ path: this.workspace.path, baseCommit: this.workspace.baseCommit, headCommit: committed.head });
        headCommit = committed.head === this.workspace.baseCommit ? null : committed.head;
      } catch (err) {
        status = 'failed';
        error = `the run ended well but its work could not be committed: ${(err as Error).message}`;
      } finally {
        endTurn();
      }
    }
    const summary = state?.summary ? redactValue(state.summary, this.secrets) : null;
    if (error) error = redactValue(error, this.secrets);
    await this.flush(this.log.closing(nowIso(app.clock)));
    await app.events.write(async () => {
      const usage = (await store.getRun(app.db, run.id))!.usage;
      if (!(await store.finishRun(app.db, run.id, { status, exitCode: exit.code, error, summary, headCommit, diffStat, now: nowIso(app.clock) }))) return;
      app.events.emit('run:finished', { runId: run.id, taskId: run.taskId, agent: run.agent, status, exitCode: exit.code, error, headCommit, usage });
      await this.settleTask(status, { error, summary, headCommit, diffStat });
      // Served well: the provider's failure counts start over (unless its runs are paused).
      const provider = status === 'succeeded' ? providerOf(this.agentRecord, this.runtime.kind) : null;
      if (provider) await providerServed(app, provider);
    });
  }

  /**
   * The run pauses (its process has ended): a usage limit pauses its provider's runs until the
   * reset (or the provider's backoff), a spent budget until the period rolls over or the limit is
   * raised. Its task is released to assigned; the same run is queued again to resume the session.
   */
  private async pause(exit: ProcessExit, state: StreamState | null, why: PauseReason): Promise<void> {
    const { app, run } = this;
    await this.flush(this.log.closing(nowIso(app.clock)));
    await app.events.write(async () => {
      const now = app.clock.now();
      const provider = providerOf(this.agentRecord, this.runtime.kind);
      let until: number | null = null;
      if (why === 'usage_limit') {
        const limit = state!.usageLimit!;
        const resetsAt = limit.resetsAt ? Date.parse(limit.resetsAt) : null;
        const reason = `usage limit${limit.status ? ` (HTTP ${limit.status})` : ''} met by run ${run.id} of ${run.agent}${limit.resetsAt ? `, resetting at ${limit.resetsAt}` : ''}`;
        // Without a provider nothing else waits; the run alone pauses, for the same time.
        until = provider ? await pauseProvider(app, provider, reason, resetsAt, now) : afterUsageLimit(HEALTHY, reason, now, resetsAt).pausedUntil;
      }
      const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
      if (!(await store.pauseRun(app.db, run.id, { reason: why, notBefore: iso(until), exitCode: exit.code, now: nowIso(app.clock) }))) return;
      const resumesAt = why === 'budget' ? ((await budgetHold(app, run.agent, now))?.periodEnd ?? null) : iso(until);
      app.events.emit('run:paused', { runId: run.id, taskId: run.taskId, agent: run.agent, reason: why, provider, until: resumesAt });
      try {
        await releaseClaim(app, run.taskId, this.leaseId, `run ${run.id} paused: ${why === 'budget' ? 'its budget is spent' : 'a usage limit of its provider'}`);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        app.log.warn('a run paused but its task could not be released', { runId: run.id, taskId: run.taskId, error: err.message });
      }
      if (why === 'usage_limit' && provider) {
        app.events.emit('runner:paused', { provider, until: iso(until)!, runs: (await (await Holds.read(app, now)).waitingByProvider()).get(provider) ?? 0 });
      }
    });
  }

  /** What the run's end does to its task (inside the run's finishing transaction). */
  private async settleTask(status: FinishedStatus, r: { error: string | null; summary: string | null; headCommit: string | null; diffStat: DiffStat | null }): Promise<void> {
    const { app, run, leaseId } = this;
    try {
      if (status === 'succeeded') {
        await transitionTask(app, run.taskId, 'review', {
          leaseId,
          reason: `run ${run.id} succeeded`,
          result: { runId: run.id, summary: r.summary, branch: this.workspace.branch, headCommit: r.headCommit, diffStat: r.diffStat },
        });
      } else if (status === 'cancelled') {
        await releaseClaim(app, run.taskId, leaseId, `run ${run.id} cancelled`);
      } else if (status === 'lost') {
        await releaseClaim(app, run.taskId, leaseId, `run ${run.id} lost: ${r.error}`);
        await queueRun(app, run.taskId, { agent: run.agent, reason: 'requeue' });
      } else {
        const task = await transitionTask(app, run.taskId, 'failed', { leaseId, reason: `run ${run.id} ${status}: ${r.error}`, result: { runId: run.id, error: r.error } });
        if (task.retries < task.maxRetries) {
          await queueRun(app, run.taskId, { agent: run.agent, reason: 'retry', notBefore: new Date(app.clock.now() + retryDelayMs(task.retries)).toISOString() });
        }
      }
    } catch (err) {
      // The task moved on by another hand (or its claim lapsed): the run's own record stands.
      if (!(err instanceof AppError)) throw err;
      app.log.warn('a run ended but its task could not follow', { runId: run.id, taskId: run.taskId, status, error: err.message });
    }
  }

  private cleanUp(): void {
    this.done = true;
    if (this.heartbeat) this.app.clock.clearTimeout(this.heartbeat);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.ctx.keys.revoke(this.id);
    if (this.runDir) rmSync(this.runDir, { recursive: true, force: true });
  }
}
