import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { App } from '../../app.js';
import { AppError } from '../../kernel/errors.js';
import { errorFields } from '../../kernel/log.js';
import { nowIso } from '../../lib/time.js';
import { redactValue } from '../../lib/redact.js';
import { getAgent, listAgents } from '../agents/service.js';
import { getMission } from '../missions/service.js';
import { placeholders } from '../playbooks/template.js';
import { skillIndex } from '../skills/live-index.js';
import { claimTask, getTask, heartbeatTask, readyTasksOf, releaseClaim, retryTask, transitionTask, dependentsOf } from '../tasks/service.js';
import { driverFor } from './drivers/index.js';
import { runEnvironment, VaultRefError } from './env.js';
import type { RunKeys } from './keys.js';
import { builtInPrompt, promptValues, templatePrompt, type PromptFacts } from './prompt.js';
import { reapRecorded } from '../../lib/reap.js';
import { eventItem, RunLogBuffer, type Numbered } from './run-log.js';
import type { Runtime } from '../agents/runtime.js';
import { dispatchTask, findRuntime, queueRun, type RunnerHandle } from './service.js';
import * as store from './store.js';
import { supervise } from './supervisor.js';
import type { DiffStat, ProcessExit, RunAgent, StreamParser, Supervised, Usage } from './types.js';
import * as git from './workspace.js';

// The runner: this daemon's part in running agents. It hears every committed event (its own and,
// on a shared state, the other daemons'), queues runs for tasks that became ready, starts queued
// runs while there are free slots, supervises each CLI process, streams its log, and ends each run
// with a commit and a task transition. Nothing here polls the queue: events and one timer (the
// next retry's backoff) wake it. DESIGN section 12; docs/runs.md.

/** Per run, about this much memory (Claude Code with its tools): the default slot count follows. */
const MB_PER_RUN = 400;
/** A run's log is written this often at most (one transaction and one run:activity event each). */
const FLUSH_MS = 100;
/** ...or as soon as this many items wait. */
const FLUSH_ITEMS = 500;
/** Between SIGTERM and SIGKILL of a cancelled run's process group. */
const KILL_GRACE_MS = 10_000;
/** A stdout line longer than this is cut. */
const MAX_LINE_BYTES = 1024 * 1024;
/** Runners write their row this often... */
const PRESENCE_MS = 5_000;
/** ...and one not seen for this long is gone: its runs are lost and queued again. */
const SILENT_MS = 30_000;
/** Worktrees of done tasks are looked for this often (and at start). */
const CLEAN_EVERY_MS = 3_600_000;
/** Queued runs looked at per pass. */
const PASS_BATCH = 50;
/** How much of a run's diff GET /runs/{id}/diff answers. */
export const DIFF_MAX_BYTES = 1024 * 1024;
/** Retry backoff: 10 s × 2^n, at most 5 min (Symphony's). */
export const retryDelayMs = (retriesUsed: number): number => Math.min(10_000 * 2 ** retriesUsed, 300_000);

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

/** The slots a machine of this memory offers by default. */
export const defaultCapacity = (memBytes = totalmem()): number => Math.max(1, Math.min(16, Math.floor((memBytes / 1024 ** 2 - 1024) / MB_PER_RUN)));

export interface RunnerOptions {
  /** Stable for a project folder on a machine: a restart finds the runs it left. */
  id: string;
  /** The state is shared with other daemons (PostgreSQL). */
  shared: boolean;
  /** This daemon's URL (SVC_URL and the CLI's MCP server). */
  url(): string;
  keys: RunKeys;
}

/** One run this daemon supervises. */
interface LiveRun {
  id: string;
  taskId: string;
  agent: string;
  leaseId: string;
  process: Supervised | null;
  parser: StreamParser | null;
  log: RunLogBuffer;
  flushTimer: NodeJS.Timeout | null;
  heartbeat: unknown;
  secrets: string[];
  /** Why the runner ended it, when it did (a cancel, the task moving away, the daemon stopping). */
  endedBy: { status: 'cancelled' | 'lost'; error: string } | null;
  /** The worktree (path), where the CLI works in it (cwd: the project's folder inside the repository), its branch and base. */
  workspace: { path: string; cwd: string; branch: string | null; baseCommit: string | null };
  runDir: string | null;
  /** Usage the stream counts that belongs to earlier runs of a resumed session (Codex), taken off. */
  usageBase: Usage | null;
  /** The CLI's last stderr line: what a failure without a message of its own says. */
  lastStderr: string | null;
  ended: Promise<void>;
}

export class Runner implements RunnerHandle {
  private readonly live = new Map<string, LiveRun>();
  private readonly host = hostname();
  private closing = false;
  private passQueued = false;
  private wake: unknown = null;
  private presence: unknown = null;
  private cleaner: unknown = null;
  private gitRoot: boolean = false;
  private unsubscribe: (() => void) | null = null;
  /** Tasks and agents to look at on the next dispatch pass (coalesced: many events, one pass). */
  private readonly toDispatch = new Set<string>();
  private readonly agentsToSweep = new Set<string>();
  private readonly available = new Map<string, { ok: boolean; at: number }>();
  private readonly looking = new Set<string>();

  constructor(
    private readonly app: App,
    private readonly o: RunnerOptions,
  ) {}

  get id(): string {
    return this.o.id;
  }

  private get config() {
    return this.app.config().runner;
  }

  capacity(): number {
    return this.config.maxConcurrentRuns ?? defaultCapacity();
  }

  /** Recovers what a crashed predecessor left, says it is online, then takes what is queued. */
  async start(): Promise<void> {
    const { app } = this;
    const repo = await git.detectRepo(app.root);
    this.gitRoot = repo.kind === 'git' && repo.head !== null;
    if (repo.kind !== 'git') app.log.warn('the project is not a git repository: agents run in the project folder itself, one at a time (git init to give each task a worktree and a branch)', { reason: repo.reason });
    else if (!repo.head) app.log.warn('the project\'s git repository has no commit yet: agents run in the project folder itself, one at a time, until it has one');
    await this.recover();
    const runtimes = await this.foundRuntimes();
    app.events.write(() => {
      store.upsertRunner(app.db, {
        id: this.o.id,
        host: this.host,
        pid: process.pid,
        labels: JSON.stringify(this.config.labels),
        runtimes: JSON.stringify(runtimes),
        capacity: this.capacity(),
        running: 0,
        started_at: nowIso(app.clock),
        seen_at: app.clock.now(),
      });
      app.events.emit('runner:online', { runnerId: this.o.id, host: this.host, runtimes: runtimes.map((r) => r.kind) });
    });
    this.unsubscribe = app.events.subscribe((e) => this.hear(e.name, e.data));
    this.presenceTick();
    this.cleanLater(0);
    // Tasks that became ready while no daemon listened (or before runs existed) are queued now.
    this.sweepAll();
    this.kick();
  }

  /** The runtimes whose executables this daemon finds (versions: GET /api/v1/runtimes asks them). */
  private async foundRuntimes(): Promise<{ kind: string; path: string; version: string | null }[]> {
    const out: { kind: string; path: string; version: string | null }[] = [];
    for (const kind of ['claude', 'codex'] as const) {
      const r = await findRuntime(this.app, { kind });
      if (r.path !== null) out.push({ kind, path: r.path, version: null });
    }
    return [...out, { kind: 'command', path: '', version: null }];
  }

  /**
   * Whether this daemon can run `runtime` (its executable is here), as last looked up: lookups are
   * asynchronous and kept a minute, so the queue's pass never waits on the disk. Unknown yet: false
   * for now, and the queue is looked at again once it is known.
   */
  private canRun(runtime: Runtime): boolean {
    const key = `${runtime.kind}\0${runtime.command ?? ''}`;
    const known = this.available.get(key);
    if (known && this.app.clock.now() - known.at < 60_000) return known.ok;
    if (!this.looking.has(key)) {
      this.looking.add(key);
      void findRuntime(this.app, runtime)
        .then((r) => this.available.set(key, { ok: r.path !== null, at: this.app.clock.now() }))
        .catch(() => this.available.set(key, { ok: false, at: this.app.clock.now() }))
        .finally(() => (this.looking.delete(key), this.kick()));
    }
    return known?.ok ?? false;
  }

  // --- hearing events: what may have become ready, what may have freed a slot

  private hear(name: string, data: Record<string, unknown>): void {
    if (this.closing) return;
    const taskId = typeof data.taskId === 'string' ? data.taskId : null;
    switch (name) {
      case 'task:created':
        if (data.assignTo) this.dispatchSoon(taskId!);
        return;
      case 'task:transition':
        if (data.to === 'pending' || data.to === 'assigned') this.dispatchSoon(taskId!);
        else if (data.to === 'done') for (const d of dependentsOf(this.app, taskId!)) this.dispatchSoon(d);
        if (data.from === 'in_progress') this.taskLeft(taskId!, String(data.to));
        return;
      case 'task:updated':
        if (Array.isArray(data.fields) && (data.fields.includes('assignTo') || data.fields.includes('dependsOn'))) this.dispatchSoon(taskId!);
        return;
      case 'task:removed':
        this.taskLeft(taskId!, null);
        return;
      case 'agent:created':
      case 'agent:updated':
        if (name === 'agent:created' || (Array.isArray(data.fields) && data.fields.includes('runtime'))) this.sweepSoon(String(data.name));
        return;
      case 'mission:resumed':
        this.kick();
        return;
      case 'run:queued':
      case 'run:finished':
      case 'runner:offline':
        this.kick();
        return;
    }
  }

  private dispatchSoon(taskId: string): void {
    this.toDispatch.add(taskId);
    this.kick();
  }

  private sweepSoon(agent: string): void {
    this.agentsToSweep.add(agent);
    this.kick();
  }

  private sweepAll(): void {
    for (const a of listAgents(this.app.db)) if (a.runtime) this.agentsToSweep.add(a.name);
  }

  /** A task with a live run here left in_progress by someone else's hand, or was removed: the run stops. */
  private taskLeft(taskId: string, to: string | null): void {
    for (const run of this.live.values()) {
      if (run.taskId !== taskId || run.endedBy) continue;
      run.endedBy = { status: 'cancelled', error: to ? `the task was moved to ${to} while the run worked` : 'the task was removed while the run worked' };
      void run.process?.cancel();
    }
  }

  // --- the queue

  /** Looks at the queue soon (coalesced): one pass however many events asked. */
  kick(): void {
    if (this.passQueued || this.closing) return;
    this.passQueued = true;
    setImmediate(() => {
      this.passQueued = false;
      try {
        this.pass();
      } catch (err) {
        this.app.log.error('the runner could not look at its queue; trying again at the next event', errorFields(err));
      }
    });
  }

  private pass(): void {
    const { app } = this;
    if (this.closing) return;
    for (const agent of this.agentsToSweep) {
      this.agentsToSweep.delete(agent);
      for (const id of readyTasksOf(app, agent, 200)) this.toDispatch.add(id);
    }
    for (const id of this.toDispatch) {
      this.toDispatch.delete(id);
      try {
        dispatchTask(app, id);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        app.log.warn('a ready task could not be queued', { taskId: id, error: err.message });
      }
    }
    if (!this.config.enabled) return;
    const nowText = nowIso(app.clock);
    for (const run of store.dueQueued(app.db, nowText, PASS_BATCH)) {
      if (this.live.size >= this.capacity()) break;
      if (!this.gitRoot && this.live.size > 0) break;
      this.tryStart(run);
    }
    this.armWake(nowText);
  }

  /** A timer for the earliest retry still waiting for its backoff. */
  private armWake(nowText: string): void {
    const { clock } = this.app;
    if (this.wake) clock.clearTimeout(this.wake);
    this.wake = null;
    const next = store.nextNotBefore(this.app.db, nowText);
    if (next) this.wake = clock.setTimeout(() => ((this.wake = null), this.kick()), Math.max(0, Date.parse(next) - clock.now()) + 5);
  }

  /** Claims one queued run and its task for this runner, then starts it; a run that cannot start now stays queued. */
  private tryStart(run: store.RunRecord): void {
    const { app } = this;
    const agent = getAgent(app.db, run.agent);
    const runtime = agent?.runtime ?? null;
    if (runtime?.runners?.length && !runtime.runners.some((l) => this.config.labels.includes(l))) return;
    // On a shared state a runner without the agent's CLI leaves its runs to one that has it.
    if (runtime && this.o.shared && !this.canRun(runtime)) return;
    let leaseId: string | null = null;
    let refused: string | null = null;
    try {
      app.events.write(() => {
        const task = getTask(app, run.taskId);
        if (!agent || !runtime) refused = `agent "${run.agent}" ${agent ? 'has no runtime any more' : 'was removed'}`;
        else if (!task) refused = 'the task was removed';
        else if (task.assignTo !== run.agent && task.status !== 'failed') refused = `the task was reassigned to ${task.assignTo ?? 'nobody'}`;
        else if (!['pending', 'assigned', 'failed'].includes(task.status)) refused = `the task is ${task.status}`;
        if (refused) return;
        if (store.activeCount(app.db, { agent: run.agent }) >= (agent!.maxConcurrency ?? 1)) return;
        if (!store.claimRun(app.db, run.id, this.o.id, nowIso(app.clock))) return;
        if (task!.status === 'failed') retryTask(app, run.taskId);
        const claimed = claimTask(app, run.taskId, run.agent);
        store.setLease(app.db, run.id, claimed.leaseId, nowIso(app.clock));
        leaseId = claimed.leaseId;
      });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      // Dependencies not done, a paused mission, retries used up: the claim was rolled back. Used-up
      // retries and a task someone else holds will not change by waiting: the run ends; the rest waits.
      if (err.code === 'conflict' && /retries|held by/.test(err.message)) refused = err.message;
      else return;
    }
    if (refused) {
      this.endQueued(run, refused);
      return;
    }
    if (leaseId === null) return;
    this.launch(run, leaseId, agent!, runtime!);
  }

  /** A queued run that can never start (its task or agent went away): cancelled with the reason. */
  private endQueued(run: store.RunRecord, why: string): void {
    const { app } = this;
    app.events.write(() => {
      if (!store.finishRun(app.db, run.id, { status: 'cancelled', exitCode: null, error: why, summary: null, headCommit: null, diffStat: null, now: nowIso(app.clock) })) return;
      app.events.emit('run:finished', { runId: run.id, taskId: run.taskId, agent: run.agent, status: 'cancelled', exitCode: null, error: why, headCommit: null, usage: run.usage });
    });
  }

  // --- one run

  private launch(run: store.RunRecord, leaseId: string, agent: NonNullable<ReturnType<typeof getAgent>>, runtime: Runtime): void {
    let done!: () => void;
    const live: LiveRun = {
      id: run.id,
      taskId: run.taskId,
      agent: run.agent,
      leaseId,
      process: null,
      parser: null,
      log: new RunLogBuffer(this.config.maxLogItems, run.logItems),
      flushTimer: null,
      heartbeat: null,
      secrets: [],
      endedBy: null,
      workspace: { path: this.app.root, cwd: this.app.root, branch: null, baseCommit: null },
      runDir: null,
      lastStderr: null,
      usageBase: null,
      ended: new Promise<void>((r) => (done = r)),
    };
    this.live.set(run.id, live);
    this.heartbeatLater(live);
    this.spawnRun(live, run, agent, runtime)
      .then((exit) => this.finish(live, run, exit))
      .catch((err) => this.app.log.error('ending a run failed', { runId: run.id, ...errorFields(err) }))
      .finally(() => {
        this.cleanUp(live);
        done();
        this.kick();
      });
  }

  /** Prepares the workspace, environment and prompt, then spawns the CLI; resolves with how it ended. */
  private async spawnRun(live: LiveRun, run: store.RunRecord, agent: NonNullable<ReturnType<typeof getAgent>>, runtime: Runtime): Promise<ProcessExit> {
    const { app } = this;
    const fail = (error: string): ProcessExit => ({ code: null, signal: null, reason: 'spawn_failed', error });
    const task = getTask(app, run.taskId);
    if (!task) return fail('the task was removed');
    const driver = driverFor(runtime.kind);
    const command = await findRuntime(app, runtime);
    if (command.path === null) return fail(command.error);

    if (this.gitRoot) {
      try {
        const ws = await git.ensureWorktree({
          root: app.root,
          dir: git.worktreeDir(app.root, run.taskId),
          branch: git.branchName(run.agent, run.taskId),
          baseRef: this.config.baseRef ?? 'HEAD',
          fromBranch: this.dependencyBranch(run.taskId),
        });
        live.workspace = { path: ws.path, cwd: ws.cwd, branch: ws.branch, baseCommit: ws.baseCommit };
      } catch (err) {
        return fail(`could not prepare the task's git worktree: ${(err as Error).message}`);
      }
    }
    if (live.endedBy) return { code: null, signal: null, reason: 'cancelled', error: null };

    const key = this.o.keys.mint(run.id, run.agent);
    const runDir = join(app.stateDir, 'runs', run.id);
    mkdirSync(runDir, { recursive: true, mode: 0o700 });
    live.runDir = runDir;
    let prompt: string;
    try {
      prompt = this.prompt(run, task, live.workspace.branch);
    } catch (err) {
      return fail((err as Error).message);
    }
    const spec = {
      runId: run.id,
      taskId: run.taskId,
      agent: this.runAgent(agent),
      runtime: { kind: runtime.kind, command: command.path!, args: runtime.args ?? [], permissionMode: runtime.permissionMode ?? 'acceptEdits' },
      cwd: live.workspace.cwd,
      prompt,
      resumeSessionId: run.resumeSessionId,
      mcp: { url: `${this.o.url()}/mcp`, key },
      runDir,
    } as const;
    const invocation = driver.build(spec);
    let env: Record<string, string>;
    try {
      const built = runEnvironment(app, run.agent, runtime, invocation.env, { url: this.o.url(), key, taskId: run.taskId, runId: run.id, agent: run.agent });
      env = built.env;
      live.secrets = built.secrets;
    } catch (err) {
      if (err instanceof VaultRefError) return fail(err.message);
      throw err;
    }
    for (const f of invocation.files) {
      mkdirSync(dirname(f.path), { recursive: true, mode: 0o700 });
      writeFileSync(f.path, f.content, { mode: 0o600 });
    }
    const parser = driver.parser({ cwd: live.workspace.cwd, clock: app.clock });
    if (driver.resumedUsage === 'session-total' && run.resumeSessionId) live.usageBase = store.sessionUsage(app.db, run.resumeSessionId);
    live.parser = parser;
    const take = (items: ReturnType<StreamParser['line']>) => {
      const at = nowIso(app.clock);
      for (const item of items) live.log.push(redactValue(item, live.secrets), at);
      if (live.log.size >= FLUSH_ITEMS) this.flush(live);
      else this.flushLater(live);
    };
    const proc = supervise(
      {
        command: invocation.command,
        args: invocation.args,
        cwd: live.workspace.cwd,
        env,
        stdin: invocation.stdin,
        stallMs: this.config.stallTimeoutSec * 1000,
        timeoutMs: this.config.timeoutSec * 1000,
        killGraceMs: KILL_GRACE_MS,
        maxLineBytes: MAX_LINE_BYTES,
        onStdoutLine: (line) => take(parser.line(line)),
        onStderrLine: (line) => {
          if (line.trim()) live.lastStderr = line.slice(0, 500);
          take([{ kind: 'stderr', text: line }]);
        },
      },
      app.clock,
    );
    live.process = proc;
    if (proc.pid !== null) {
      const pid = proc.pid;
      app.events.write(() => {
        store.setStarted(app.db, run.id, { pid, pidStart: proc.startTime, workspace: live.workspace.path, branch: live.workspace.branch, baseCommit: live.workspace.baseCommit, now: nowIso(app.clock) });
        app.events.emit('run:started', { runId: run.id, taskId: run.taskId, agent: run.agent, runner: this.o.id, pid, branch: live.workspace.branch });
      });
    }
    if (live.endedBy) void proc.cancel();
    return proc.exited;
  }

  /** The branch of the task's single dependency's latest run, to build on its work. */
  private dependencyBranch(taskId: string): string | null {
    const deps = getTask(this.app, taskId)?.dependsOn ?? [];
    if (deps.length !== 1) return null;
    return store.latestRunOfTask(this.app.db, deps[0]!)?.branch ?? null;
  }

  private runAgent(agent: NonNullable<ReturnType<typeof getAgent>>): RunAgent {
    const index = skillIndex(this.app);
    return {
      name: agent.name,
      model: agent.model,
      systemPrompt: agent.systemPrompt,
      maxTurns: agent.maxTurns,
      allowedTools: agent.allowedTools,
      allowedPaths: agent.allowedPaths.map((p) => resolve(this.app.root, p)),
      reasoning: agent.reasoning,
      displayName: agent.identity?.displayName ?? null,
      email: agent.identity?.email ?? null,
      skills: agent.skills.flatMap((name) => {
        const s = index.get(name);
        return s && !('error' in s && s.error) ? [{ name, dir: s.dir }] : [];
      }),
    };
  }

  private prompt(run: store.RunRecord, task: NonNullable<ReturnType<typeof getTask>>, branch: string | null): string {
    const { app } = this;
    let mission: PromptFacts['mission'] = null;
    if (task.missionId) {
      try {
        const m = getMission(app, task.missionId);
        mission = { name: m.name, goal: m.goal };
      } catch {
        mission = null;
      }
    }
    const facts: PromptFacts = {
      agent: run.agent,
      runId: run.id,
      task: { id: task.id, title: task.title, description: task.description },
      mission,
      dependencies: task.dependsOn.map((id) => {
        const dep = getTask(app, id);
        const last = store.latestRunOfTask(app.db, id);
        return { id, title: dep?.title ?? id, summary: last?.summary ?? null, branch: last?.branch ?? null };
      }),
      feedback: run.reason === 'revision' ? run.prompt : null,
      request: run.reason === 'revision' ? null : run.prompt,
      branch,
    };
    const file = this.config.promptFile;
    if (!file) return builtInPrompt(facts);
    let template: string;
    try {
      template = readFileSync(resolve(app.root, file), 'utf8');
    } catch (err) {
      throw new Error(`runner.promptFile ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const known = promptValues(facts);
    const unknown = placeholders(template).filter((p) => !Object.hasOwn(known, p.name));
    if (unknown.length) throw new Error(`runner.promptFile ${file}: {{${unknown[0]!.name}}} is not a placeholder svc fills (it fills: ${Object.keys(known).join(', ')})`);
    return templatePrompt(template, facts);
  }

  // --- while it runs

  /** Batching, not a deadline: on the real clock whatever clock the daemon keeps (a test's fake one included). */
  private flushLater(live: LiveRun): void {
    if (live.flushTimer) return;
    live.flushTimer = setTimeout(() => {
      live.flushTimer = null;
      this.flush(live);
    }, FLUSH_MS).unref();
  }

  /** Writes the log items that wait, the run's progress and one run:activity event, in one transaction. */
  private flush(live: LiveRun, closing: Numbered | null = null): void {
    const { app } = this;
    if (live.flushTimer) {
      clearTimeout(live.flushTimer as NodeJS.Timeout);
      live.flushTimer = null;
    }
    const items = live.log.take();
    if (closing) items.push(closing);
    const state = live.parser?.state();
    if (!items.length && !state) return;
    try {
      app.events.write(() => {
        if (items.length) store.insertLog(app.db, live.id, items);
        if (state) {
          store.setProgress(app.db, live.id, {
            turns: state.turns,
            usage: runUsage(state.usage, live.usageBase),
            sessionId: state.sessionId,
            logCount: live.log.count,
            logDropped: live.log.droppedCount,
            now: nowIso(app.clock),
          });
        }
        if (items.length) app.events.emit('run:activity', { runId: live.id, taskId: live.taskId, agent: live.agent, fromSeq: items[0]!.seq, items: items.map(eventItem) });
      });
    } catch (err) {
      app.log.error("writing a run's log failed; those items are lost", { runId: live.id, items: items.length, ...errorFields(err) });
    }
  }

  /** Keeps the task's claim alive while the run lives. */
  private heartbeatLater(live: LiveRun): void {
    const { app } = this;
    const every = Math.min(60_000, (app.config().tasks.leaseSeconds * 1000) / 3);
    live.heartbeat = app.clock.setTimeout(() => {
      live.heartbeat = null;
      if (!this.live.has(live.id)) return;
      try {
        heartbeatTask(app, live.taskId, live.leaseId);
      } catch (err) {
        if (!(err instanceof AppError)) app.log.error('heartbeat of a run failed', { runId: live.id, ...errorFields(err) });
        else app.log.warn("a run's task claim is gone; the run goes on until it ends", { runId: live.id, error: err.message });
      }
      this.heartbeatLater(live);
    }, every);
  }

  // --- the end

  private async finish(live: LiveRun, run: store.RunRecord, exit: ProcessExit): Promise<void> {
    const { app } = this;
    const state = live.parser?.state() ?? null;
    let status: store.Finish['status'];
    let error: string | null = null;
    if (live.endedBy) {
      status = live.endedBy.status;
      error = live.endedBy.error;
    } else if (exit.reason === 'stalled') {
      status = 'timed_out';
      error = `no output for ${this.config.stallTimeoutSec} s (runner.stallTimeoutSec)`;
    } else if (exit.reason === 'timed_out') {
      status = 'timed_out';
      error = `ran longer than ${this.config.timeoutSec} s (runner.timeoutSec)`;
    } else if (exit.reason === 'cancelled') {
      status = 'cancelled';
      error = 'cancelled';
    } else if (exit.reason === 'spawn_failed') {
      status = 'failed';
      error = exit.error ?? 'the CLI could not be started';
    } else if (exit.code === 0 && state?.succeeded !== false) {
      status = 'succeeded';
    } else {
      status = 'failed';
      error = state?.error ?? (exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`) + (live.lastStderr ? `: ${live.lastStderr}` : '');
    }

    let headCommit: string | null = null;
    let diffStat: DiffStat | null = null;
    if (status === 'succeeded' && live.workspace.branch && live.workspace.baseCommit) {
      try {
        const agent = getAgent(app.db, run.agent);
        const task = getTask(app, run.taskId);
        const committed = await git.commitAll({
          path: live.workspace.path,
          author: { name: agent?.identity?.displayName ?? `${run.agent} (svc)`, email: agent?.identity?.email ?? `${run.agent}@svc.invalid` },
          message: `${task?.title ?? run.taskId}\n\n${redactValue((state?.summary ?? '').slice(0, 4000), live.secrets)}`.trim(),
          trailers: { 'Svc-Task': run.taskId, 'Svc-Run': run.id },
        });
        // The agent may have committed on its own: its work is everything from the base to the head.
        diffStat = await git.diffStat({ path: live.workspace.path, baseCommit: live.workspace.baseCommit, headCommit: committed.head });
        headCommit = committed.head === live.workspace.baseCommit ? null : committed.head;
      } catch (err) {
        status = 'failed';
        error = `the run ended well but its work could not be committed: ${(err as Error).message}`;
      }
    }

    const summary = state?.summary ? redactValue(state.summary, live.secrets) : null;
    if (error) error = redactValue(error, live.secrets);
    this.flush(live, live.log.closing(nowIso(app.clock)));
    const finished = status as 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'lost';
    app.events.write(() => {
      const now = nowIso(app.clock);
      const after = store.getRun(app.db, run.id)!;
      if (!store.finishRun(app.db, run.id, { status: finished, exitCode: exit.code, error, summary, headCommit, diffStat, now })) return;
      app.events.emit('run:finished', { runId: run.id, taskId: run.taskId, agent: run.agent, status: finished, exitCode: exit.code, error, headCommit, usage: after.usage });
      this.settleTask(run, live, finished, { error, summary, headCommit, diffStat, branch: live.workspace.branch });
    });
  }

  /** What the run's end does to its task (inside the run's finishing transaction). */
  private settleTask(
    run: store.RunRecord,
    live: LiveRun,
    status: 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'lost',
    r: { error: string | null; summary: string | null; headCommit: string | null; diffStat: DiffStat | null; branch: string | null },
  ): void {
    const { app } = this;
    try {
      if (status === 'succeeded') {
        transitionTask(app, run.taskId, 'review', {
          leaseId: live.leaseId,
          reason: `run ${run.id} succeeded`,
          result: { runId: run.id, summary: r.summary, branch: r.branch, headCommit: r.headCommit, diffStat: r.diffStat },
        });
      } else if (status === 'cancelled') {
        releaseClaim(app, run.taskId, live.leaseId, `run ${run.id} cancelled`);
      } else if (status === 'lost') {
        releaseClaim(app, run.taskId, live.leaseId, `run ${run.id} lost: ${r.error}`);
        queueRun(app, run.taskId, { agent: run.agent, reason: 'requeue' });
      } else {
        const task = transitionTask(app, run.taskId, 'failed', { leaseId: live.leaseId, reason: `run ${run.id} ${status}: ${r.error}`, result: { runId: run.id, error: r.error } });
        if (task.retries < task.maxRetries) {
          queueRun(app, run.taskId, { agent: run.agent, reason: 'retry', notBefore: new Date(app.clock.now() + retryDelayMs(task.retries)).toISOString() });
        }
      }
    } catch (err) {
      // The task moved on by another hand (or its claim lapsed): the run's own record stands.
      if (!(err instanceof AppError)) throw err;
      app.log.warn("a run ended but its task could not follow", { runId: run.id, taskId: run.taskId, status, error: err.message });
    }
  }

  private cleanUp(live: LiveRun): void {
    const { app } = this;
    if (live.heartbeat) app.clock.clearTimeout(live.heartbeat);
    if (live.flushTimer) clearTimeout(live.flushTimer as NodeJS.Timeout);
    this.o.keys.revoke(live.id);
    if (live.runDir) rmSync(live.runDir, { recursive: true, force: true });
    this.live.delete(live.id);
  }

  // --- cancel, recovery, presence, stop

  async cancel(runId: string): Promise<boolean> {
    const live = this.live.get(runId);
    if (!live) return false;
    live.endedBy ??= { status: 'cancelled', error: 'cancelled' };
    await live.process?.cancel();
    await live.ended;
    return true;
  }

  /**
   * Runs a previous daemon of this runner left unfinished (it crashed, or was killed): their
   * process groups are killed by pid and start time (never by name), the runs marked lost, their
   * tasks released and the runs queued again (resuming the CLI's session). With a SQLite state the
   * daemon is the only runner, so every unfinished run is its predecessor's.
   */
  private async recover(): Promise<void> {
    const { app } = this;
    const left = this.o.shared ? store.unfinishedOf(app.db, this.o.id) : store.unfinishedAnywhere(app.db);
    if (!left.length) return;
    const records = left.filter((r) => r.pid !== null && r.pidStart !== null).map((r) => ({ pid: r.pid!, startTime: r.pidStart! }));
    const killed = await reapRecorded(records, { group: true, graceMs: KILL_GRACE_MS, waitMs: 5_000 });
    if (killed.length) app.log.warn("killed agent processes a stopped daemon left running", { processes: killed.map((k) => k.pid) });
    for (const r of left) this.loseRun(r, 'the daemon running it stopped without ending it (a crash or a kill); it is started again');
    app.log.warn('runs left by a daemon that stopped unexpectedly were marked lost and queued again', { runs: left.length });
  }

  /** Marks a run lost, releases its task and queues it again (in one transaction). */
  private loseRun(r: store.RunRecord, why: string): void {
    const { app } = this;
    app.events.write(() => {
      if (!store.finishRun(app.db, r.id, { status: 'lost', exitCode: null, error: why, summary: null, headCommit: null, diffStat: null, now: nowIso(app.clock) })) return;
      app.events.emit('run:finished', { runId: r.id, taskId: r.taskId, agent: r.agent, status: 'lost', exitCode: null, error: why, headCommit: null, usage: r.usage });
      if (r.leaseId) releaseClaim(app, r.taskId, r.leaseId, `run ${r.id} lost`);
      try {
        queueRun(app, r.taskId, { agent: r.agent, reason: 'requeue' });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        app.log.warn('a lost run could not be queued again', { runId: r.id, error: err.message });
      }
    });
  }

  /** Says this runner is alive, and (shared state) takes over the runs of runners that went silent. */
  private presenceTick(): void {
    const { app } = this;
    if (this.closing) return;
    try {
      const alive = app.events.write(() => store.touchRunner(app.db, this.o.id, this.live.size, app.clock.now()));
      if (!alive) this.rejoin();
      if (this.o.shared) {
        for (const gone of store.silentRunners(app.db, app.clock.now() - SILENT_MS, this.o.id)) this.takeOver(gone.id, gone.host);
        this.cancelRequested();
      }
    } catch (err) {
      app.log.warn('the runner could not write its presence; trying again', { error: (err as Error).message });
    }
    this.presence = app.clock.setTimeout(() => this.presenceTick(), PRESENCE_MS);
  }

  /**
   * Another daemon took this runner for gone (it was silent too long: suspended, or cut off from
   * the database) and queued its runs again elsewhere: the processes still running here are
   * duplicates now, so they are ended without a word in the state (their runs are already lost),
   * and the runner comes back online.
   */
  private rejoin(): void {
    const { app } = this;
    app.log.warn('another daemon took this runner for gone and queued its runs again; ending the processes still running here', { runs: this.live.size });
    for (const run of this.live.values()) {
      run.endedBy ??= { status: 'lost', error: 'its runner was taken for gone; it runs elsewhere' };
      void run.process?.cancel();
    }
    app.events.write(() => {
      store.upsertRunner(app.db, { ...store.getRunner(app.db, this.o.id)!, seen_at: app.clock.now(), running: 0 });
      app.events.emit('runner:online', { runnerId: this.o.id, host: this.host, runtimes: (JSON.parse(store.getRunner(app.db, this.o.id)!.runtimes) as { kind: string }[]).map((r) => r.kind) });
    });
  }

  private takeOver(runnerId: string, host: string): void {
    const { app } = this;
    const lost: string[] = [];
    app.events.write(() => {
      if (!store.stopRunner(app.db, runnerId, nowIso(app.clock))) return; // another daemon came first
      for (const r of store.unfinishedOf(app.db, runnerId)) {
        this.loseRun(r, `its runner ${runnerId} on ${host} stopped answering; it is started again`);
        lost.push(r.id);
      }
      app.events.emit('runner:offline', { runnerId, host, reason: 'unresponsive', lostRuns: lost });
    });
  }

  private cleanLater(ms: number): void {
    this.cleaner = this.app.clock.setTimeout(() => {
      this.cleaner = null;
      this.cleanWorkspaces()
        .catch((err) => this.app.log.warn('removing old worktrees failed; trying again later', { error: (err as Error).message }))
        .finally(() => !this.closing && this.cleanLater(CLEAN_EVERY_MS));
    }, ms);
  }

  /**
   * Removes the worktrees of tasks that are done (or gone) and whose last run ended more than
   * runner.keepWorkspacesHours ago; their branches stay (they hold the work).
   */
  async cleanWorkspaces(): Promise<number> {
    const { app } = this;
    if (!this.gitRoot) return 0;
    const cutoff = app.clock.now() - this.config.keepWorkspacesHours * 3_600_000;
    let removed = 0;
    const seen = new Set<string>();
    for (const c of store.workspacesToClean(app.db, new Date(cutoff).toISOString(), 200)) {
      if (seen.has(c.workspace) || this.closing) continue;
      seen.add(c.workspace);
      const task = getTask(app, c.taskId);
      if (task && task.status !== 'done') continue;
      const latest = store.latestRunOfTask(app.db, c.taskId);
      if (latest && (latest.finishedAt === null || Date.parse(latest.finishedAt) > cutoff)) continue;
      await git.removeWorktree({ root: app.root, path: c.workspace });
      app.events.write(() => store.clearWorkspace(app.db, c.workspace));
      removed++;
    }
    if (removed) app.log.info("removed the worktrees of done tasks (their branches stay)", { worktrees: removed });
    return removed;
  }

  /** A cancel asked through another daemon (shared state) of a run this one runs. */
  private cancelRequested(): void {
    for (const id of store.cancelRequestedOf(this.app.db, this.o.id)) void this.cancel(id);
  }

  /**
   * Stops: no new runs; live ones are ended (SIGTERM, SIGKILL after a short grace), marked lost and
   * queued again, so the next start (or another runner) resumes their sessions.
   */
  async close(): Promise<void> {
    const { app } = this;
    if (this.closing) return;
    this.closing = true;
    this.unsubscribe?.();
    if (this.wake) app.clock.clearTimeout(this.wake);
    if (this.presence) app.clock.clearTimeout(this.presence);
    if (this.cleaner) app.clock.clearTimeout(this.cleaner);
    const live = [...this.live.values()];
    for (const run of live) {
      run.endedBy = { status: 'lost', error: 'the daemon stopped while it ran; it is started again' };
      void run.process?.cancel();
    }
    await Promise.all(live.map((r) => r.ended));
    try {
      app.events.write(() => {
        if (store.stopRunner(app.db, this.o.id, nowIso(app.clock))) {
          app.events.emit('runner:offline', { runnerId: this.o.id, host: this.host, reason: 'stopped', lostRuns: live.map((r) => r.id) });
        }
      });
    } catch (err) {
      app.log.warn('the runner could not record its stop', { error: (err as Error).message });
    }
  }
}
