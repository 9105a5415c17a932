import { hostname, totalmem } from 'node:os';
import type { App } from '../../app.js';
import { lockKey } from '../../db/open.js';
import { AppError, isStateOutage } from '../../kernel/errors.js';
import { errorFields } from '../../kernel/log.js';
import { systemClock } from '../../lib/clock.js';
import { reapRecorded } from '../../lib/reap.js';
import { nowIso } from '../../lib/time.js';
import { listAgents } from '../agents/service.js';
import { noteSpend } from '../budgets/service.js';
import { endPause } from '../providers/service.js';
import { claimTask, dependentsOf, getTask, readyTasksOf, releaseClaim, retryTask } from '../tasks/service.js';
import { Holds } from './holds.js';
import type { RunKeys } from './keys.js';
import { KILL_GRACE_MS, LiveRun, type RunContext } from './live-run.js';
import { DispatchGate } from './dispatch-gate.js';
import { dispatchTask, findRuntime, queueRun, type RunnerHandle } from './service.js';
import { RuntimeLookups } from './runtime-lookups.js';
import { SparePool } from './spares.js';
import * as store from './store.js';
import * as git from './workspace.js';

// The runner: this daemon's part in running agents. It hears every committed event (its own and,
// on a shared state, the other daemons'), queues runs for tasks that became ready, and starts
// queued runs while there are free slots (each a LiveRun, live-run.ts). Nothing here polls the
// queue: events and one timer (the next retry's backoff) wake it. It also takes over the runs of
// a crashed predecessor or a silent runner, and removes old worktrees. What holds a queued run
// (a paused provider, a spent budget: holds.ts) is looked at in each pass; runs paused by those
// resume there once nothing holds them. DESIGN section 12; docs/runs.md.

/** Per run, about this much memory (Claude Code with its tools): the default slot count follows. */
const MB_PER_RUN = 400;
// On a shared state runners write their row every runner.heartbeatSec, and one not seen for
// runner.offlineAfterSec is gone: its runs are lost and queued again. Wall-clock times (the seam's
// systemClock), not the daemon's clock: rows are compared across machines and processes (as
// system/presence.ts does), and one daemon's fake clock in a test cannot silence another process.
/** Worktrees of done tasks are looked for this often (and at start). */
const CLEAN_EVERY_MS = 3_600_000;
/** Queued runs looked at per pass. */
const PASS_BATCH = 50;
/** A pass that failed (the state unreachable) is tried again after this, doubled each time up to RETRY_MAX_MS. */
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/**
 * The wake timer is set this far ahead at most, and the pass it runs sets the next: a budget's
 * month is longer than a timer can wait (2^31 ms), and a clock moved meanwhile is caught up.
 */
const MAX_WAKE_MS = 3_600_000;
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

export class Runner implements RunnerHandle {
  private readonly live = new Map<string, LiveRun>();
  private readonly host = hostname();
  private closing = false;
  private passQueued = false;
  private wake: unknown = null;
  /** The next try of a pass that failed, and how long it waits (0: the last pass went through). */
  private retry: NodeJS.Timeout | null = null;
  private retryMs = 0;
  private presence: NodeJS.Timeout | null = null;
  private cleaner: NodeJS.Timeout | null = null;
  /** Spare worktrees (a git project): a new task's worktree is one of them moved into place. */
  private spares: SparePool | null = null;
  /** The spares an earlier daemon left being looked at: close() waits for it. */
  private sparesOpen: Promise<void> | null = null;
  /** Held while runs are dispatched: the other git work waits (dispatch-gate.ts). */
  private readonly gate = new DispatchGate();
  /** The gate held for tasks heard of, until the next pass is over. */
  private dispatching: (() => void) | null = null;
  private gitRoot: boolean = false;
  private unsubscribe: (() => void) | null = null;
  /** Tasks and agents to look at on the next dispatch pass (coalesced: many events, one pass). */
  private readonly toDispatch = new Set<string>();
  private readonly agentsToSweep = new Set<string>();
  /** Where the runtimes' executables were last found (runtime-lookups.ts). */
  private readonly runtimes: RuntimeLookups;

  /** What each run needs of this runner. */
  private readonly context: RunContext;

  constructor(
    private readonly app: App,
    private readonly o: RunnerOptions,
  ) {
    this.runtimes = new RuntimeLookups(app, () => this.kick());
    this.context = { runnerId: o.id, gitRoot: false, url: o.url, keys: o.keys, config: () => this.config, spares: null, turn: this.gate.turn, runtimePath: this.runtimes.path };
  }

  get id(): string {
    return this.o.id;
  }

  private get config() {
    return this.app.config().runner;
  }

  capacity(): number {
    return this.config.maxConcurrentRuns ?? defaultCapacity();
  }

  slots(): { running: number; capacity: number } {
    return { running: this.live.size, capacity: this.gitRoot ? this.capacity() : 1 };
  }

  private started: Promise<void> | null = null;

  /**
   * Recovers what a crashed predecessor left, says it is online, then takes what is queued. Never
   * throws: a runner that cannot start logs why, and the daemon serves the API without it.
   */
  start(): Promise<void> {
    this.started ??= this.startUp().catch((err) => this.app.log.error('the runner could not start; agents will not be run until the daemon restarts', errorFields(err)));
    return this.started;
  }

  private async startUp(): Promise<void> {
    const { app } = this;
    const repo = await git.detectRepo(app.root);
    if (this.closing) return;
    this.gitRoot = repo.kind === 'git' && repo.head !== null;
    this.context.gitRoot = this.gitRoot;
    if (repo.kind !== 'git')
      app.log.warn('the project is not a git repository: agents run in the project folder itself, one at a time (git init to give each task a worktree and a branch)', { reason: repo.reason });
    else if (!repo.head) app.log.warn("the project's git repository has no commit yet: agents run in the project folder itself, one at a time, until it has one");
    if (this.gitRoot) {
      this.spares = new SparePool({
        root: app.root,
        start: () => this.config.baseRef ?? 'HEAD',
        max: () => this.capacity(),
        turn: this.gate.turn,
        quiet: () => this.gate.quiet(),
        onError: (err) => app.log.debug('a spare worktree could not be made or used; the next worktree is made by git', errorFields(err)),
      });
      this.context.spares = this.spares;
    }
    await this.recover();
    const runtimes = await this.foundRuntimes();
    if (this.closing) return;
    await app.events.write(async () => {
      await store.upsertRunner(app.db, {
        id: this.o.id,
        host: this.host,
        pid: process.pid,
        labels: JSON.stringify(this.config.labels),
        runtimes: JSON.stringify(runtimes),
        capacity: this.capacity(),
        running: 0,
        started_at: nowIso(app.clock),
        seen_at: systemClock.now(),
      });
      // Said to the others: alone on a SQLite state, the daemon's own start says it.
      if (this.o.shared) app.events.emit('runner:online', { runnerId: this.o.id, host: this.host, runtimes: runtimes.map((r) => r.kind) });
    });
    // Heard one after another, in id order: what an event leads to may read the state.
    this.unsubscribe = app.events.subscribe((e) => {
      this.hearing = this.hearing
        .then(() => this.hear(e.name, e.data))
        .catch((err: unknown) => app.log.error('the runner could not act on an event', { event: e.name, eventId: e.id, ...errorFields(err) }));
    });
    this.sparesOpen = this.spares?.open().catch((err) => app.log.warn('the spare worktrees could not be looked at; worktrees are made by git', errorFields(err))) ?? null;
    // Presence matters to other runners only: a daemon alone on its SQLite state is its only runner.
    if (this.o.shared) await this.presenceTick();
    this.clean();
    // Tasks that became ready while no daemon listened (or before runs existed) are queued now.
    await this.sweepAll();
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

  // --- hearing events: what may have become ready, what may have freed a slot

  /** The events heard and not yet acted on, one after another. */
  private hearing: Promise<void> = Promise.resolve();
  /** The queue pass under way. */
  private passing: Promise<void> = Promise.resolve();

  private async hear(name: string, data: Record<string, unknown>): Promise<void> {
    if (this.closing) return;
    const taskId = typeof data.taskId === 'string' ? data.taskId : null;
    switch (name) {
      case 'task:created':
        if (data.assignTo) this.dispatchSoon(taskId!);
        return;
      case 'task:transition':
        if (data.to === 'pending' || data.to === 'assigned') this.dispatchSoon(taskId!);
        else if (data.to === 'done') for (const d of await dependentsOf(this.app, taskId!)) this.dispatchSoon(d);
        if (data.from === 'in_progress') this.taskLeft(taskId!, String(data.to));
        else if (data.to !== 'pending' && data.to !== 'assigned' && data.to !== 'failed') await this.waitingTaskLeft(taskId!, String(data.to));
        return;
      case 'task:updated':
        if (Array.isArray(data.fields) && (data.fields.includes('assignTo') || data.fields.includes('dependsOn'))) this.dispatchSoon(taskId!);
        return;
      case 'task:removed':
        this.taskLeft(taskId!, null);
        await this.waitingTaskLeft(taskId!, null);
        return;
      case 'agent:created':
      case 'agent:updated':
        if (name === 'agent:created' || (Array.isArray(data.fields) && data.fields.includes('runtime'))) this.sweepSoon(String(data.name));
        return;
      case 'config:reloaded':
        // Budgets in project.json may have been raised (runs they held start) or lowered (said now).
        await this.noteBudgets();
        this.kick();
        return;
      case 'mission:resumed':
      case 'run:queued':
      case 'run:finished':
      case 'run:paused':
      case 'run:resumed':
      case 'runner:offline':
      case 'runner:resumed':
      case 'budget:updated':
        this.kick();
        return;
    }
  }

  private dispatchSoon(taskId: string): void {
    // Closing: no pass will run to release a hold taken now.
    if (this.closing) return;
    this.toDispatch.add(taskId);
    // A task that may become a run: other git work waits until the pass is over (and the runs it starts are spawned).
    this.dispatching ??= this.gate.hold();
    this.kick();
  }

  private sweepSoon(agent: string): void {
    this.agentsToSweep.add(agent);
    this.kick();
  }

  private async sweepAll(): Promise<void> {
    for (const a of await listAgents(this.app.db)) if (a.runtime) this.agentsToSweep.add(a.name);
  }

  /**
   * The task of a waiting run (queued or paused) was moved where no run can take it, or removed:
   * the run ends now rather than when nothing holds it any more (a pause may last hours).
   */
  private async waitingTaskLeft(taskId: string, to: string | null): Promise<void> {
    const live = await store.liveRunOfTask(this.app.db, taskId);
    if (live?.status !== 'queued' && live?.status !== 'paused') return;
    await this.endQueued(live, to ? `the task was moved to ${to} while the run waited` : 'the task was removed while the run waited');
  }

  private async noteBudgets(): Promise<void> {
    try {
      await this.app.events.write(async () => await noteSpend(this.app, null));
    } catch (err) {
      this.app.log.warn('the budgets could not be looked at after the config changed', errorFields(err));
    }
  }

  /** A task with a live run here left in_progress by someone else's hand, or was removed: the run stops. */
  private taskLeft(taskId: string, to: string | null): void {
    for (const run of this.live.values()) {
      if (run.taskId === taskId) void run.end('cancelled', to ? `the task was moved to ${to} while the run worked` : 'the task was removed while the run worked');
    }
  }

  // --- the queue

  /** Looks at the queue soon (coalesced): one pass however many events asked. */
  kick(): void {
    if (this.passQueued || this.closing) return;
    this.passQueued = true;
    setImmediate(() => {
      // One pass at a time (each counts the slots it fills): a kick during one queues the next.
      this.passing = this.passing.then(async () => {
        this.passQueued = false;
        const release = this.dispatching ?? (() => {});
        this.dispatching = null;
        try {
          await this.pass();
          this.retryMs = 0;
        } catch (err) {
          // What it had yet to look at stays for the next pass, which no event may ask for (a quiet
          // daemon, a wake timer that already fired): so it is tried again on a timer of its own.
          this.retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, this.retryMs * 2));
          const why = { ...errorFields(err), retryInMs: this.retryMs };
          // An outage is said once by the state's outage log; anything else is a fault of its own.
          if (isStateOutage(err)) this.app.log.debug('the runner could not look at its queue; trying again', why);
          else this.app.log.error('the runner could not look at its queue; trying again', why);
          if (!this.retry && !this.closing) this.retry = setTimeout(() => ((this.retry = null), this.kick()), this.retryMs).unref();
        } finally {
          release();
        }
      });
    });
  }

  private async pass(): Promise<void> {
    const { app } = this;
    if (this.closing) return;
    await this.lookAt(this.agentsToSweep, 'agent', async (agent) => {
      for (const id of await readyTasksOf(app, agent, 200)) this.toDispatch.add(id);
    });
    await this.lookAt(this.toDispatch, 'taskId', (id) => dispatchTask(app, id));
    if (!this.config.enabled) return;
    const holds = await Holds.read(app);
    await this.endPauses(holds);
    if (this.config.autoResume) await this.resumePaused(holds);
    const nowText = nowIso(app.clock);
    const due = await store.dueQueued(app.db, nowText, PASS_BATCH);
    if (this.spares && due.length) this.spares.expect(await this.startable(due, holds));
    for (const run of due) {
      if (this.live.size >= this.capacity()) break;
      if (!this.gitRoot && this.live.size > 0) break;
      await this.tryStart(run, holds);
    }
    await this.armWake(nowText, holds);
  }

  /**
   * `fn` for each of `keys`, each let go of once done. An outage ends the pass with the rest kept
   * for the next; any other failure is said and let go of, so that one cannot hold the queue up.
   */
  private async lookAt(keys: Set<string>, field: string, fn: (key: string) => Promise<unknown>): Promise<void> {
    for (const key of keys) {
      try {
        await fn(key);
      } catch (err) {
        if (isStateOutage(err)) throw err;
        if (err instanceof AppError) this.app.log.warn('a ready task could not be queued', { [field]: key, error: err.message });
        else this.app.log.error('a ready task could not be queued', { [field]: key, ...errorFields(err) });
      }
      keys.delete(key);
    }
  }

  /**
   * About how many of the queued runs can start soon, each wanting a worktree: per agent up to its
   * maxConcurrency, in all up to the free slots. The spare worktrees aim at that many.
   */
  private async startable(due: store.RunRecord[], holds: Holds): Promise<number> {
    const perAgent = new Map<string, number>();
    for (const r of due) perAgent.set(r.agent, (perAgent.get(r.agent) ?? 0) + 1);
    let n = 0;
    for (const [name, count] of perAgent) n += Math.min(count, (await holds.agent(name))?.maxConcurrency ?? 1);
    return Math.min(n, this.capacity() - this.live.size);
  }

  /** Providers whose pause came to its end: said once (runner:resumed), whichever runner comes first. */
  private async endPauses(holds: Holds): Promise<void> {
    const { app } = this;
    for (const [provider, until] of holds.pausesOver()) {
      await app.events.write(async () => {
        if (!(await endPause(app, provider, until))) return;
        app.events.emit('runner:resumed', { provider, runs: (await holds.waitingByProvider()).get(provider) ?? 0, by: 'runner' });
      });
    }
  }

  /** Paused runs that nothing holds any more are queued again, to resume their sessions (runner.autoResume). */
  private async resumePaused(holds: Holds): Promise<void> {
    const { app } = this;
    for (const run of await store.pausedRuns(app.db, PASS_BATCH)) {
      if (await holds.of(run)) continue;
      await app.events.write(async () => {
        if (!(await store.unpauseRun(app.db, run.id, nowIso(app.clock)))) return;
        app.events.emit('run:resumed', { runId: run.id, taskId: run.taskId, agent: run.agent, by: 'runner' });
      });
    }
  }

  /** A timer for the earliest time a hold ends: a retry's backoff, a reset, a provider's pause, a budget's period. */
  private async armWake(nowText: string, holds: Holds): Promise<void> {
    const { app } = this;
    const { clock } = app;
    if (this.wake) clock.clearTimeout(this.wake);
    this.wake = null;
    const times = [await store.nextNotBefore(app.db, nowText), this.config.autoResume ? await store.nextPausedNotBefore(app.db, nowText) : null].flatMap((t) => (t ? [Date.parse(t)] : []));
    if (holds.next !== null) times.push(holds.next);
    times.push(...holds.pausedNow().values());
    if (!times.length) return;
    const delay = Math.min(Math.max(0, Math.min(...times) - clock.now()) + 5, MAX_WAKE_MS);
    this.wake = clock.setTimeout(() => ((this.wake = null), this.kick()), delay);
  }

  /** Claims one queued run and its task for this runner, then starts it; a run that cannot start now stays queued. */
  private async tryStart(run: store.RunRecord, holds: Holds): Promise<void> {
    const { app } = this;
    const agent = await holds.agent(run.agent);
    const runtime = agent?.runtime ?? null;
    if (runtime?.runners?.length && !runtime.runners.some((l) => this.config.labels.includes(l))) return;
    // On a shared state a runner without the agent's CLI leaves its runs to one that has it.
    if (runtime && this.o.shared && !this.runtimes.canRun(runtime)) return;
    // Its provider paused by a usage limit, or a budget of its scope spent: it waits (the wake timer knows until when).
    if (runtime && (await holds.blocking(run.agent))) return;
    let leaseId: string | null = null;
    let refused: string | null = null;
    try {
      await app.events.write(async () => {
        // Runners on other daemons start this agent's runs too: its maxConcurrency is counted one claim at a time.
        await lockKey(app.db, 'agent-runs', run.agent);
        // Another runner may have taken it while this one waited for the lock: then it is theirs.
        if ((await store.getRun(app.db, run.id))?.status !== 'queued') return;
        const task = await getTask(app, run.taskId);
        if (!agent || !runtime) refused = `agent "${run.agent}" ${agent ? 'has no runtime any more' : 'was removed'}`;
        else if (!task) refused = 'the task was removed';
        else if (task.assignTo !== run.agent && task.status !== 'failed') refused = `the task was reassigned to ${task.assignTo ?? 'nobody'}`;
        else if (!['pending', 'assigned', 'failed'].includes(task.status)) refused = `the task is ${task.status}`;
        if (refused) return;
        if ((await store.activeCount(app.db, { agent: run.agent })) >= (agent!.maxConcurrency ?? 1)) return;
        if (!(await store.claimRun(app.db, run.id, this.o.id, nowIso(app.clock)))) return;
        if (task!.status === 'failed') await retryTask(app, run.taskId);
        const claimed = await claimTask(app, run.taskId, run.agent);
        await store.setLease(app.db, run.id, claimed.leaseId, nowIso(app.clock));
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
      await this.endQueued(run, refused);
      return;
    }
    if (leaseId === null) return;
    const live = new LiveRun(this.app, this.context, run, leaseId, agent!, runtime!);
    this.live.set(run.id, live);
    void live.spawned.finally(this.gate.hold());
    void live.ended.then(() => {
      this.live.delete(run.id);
      this.kick();
    });
  }

  /** A queued run that can never start (its task or agent went away): cancelled with the reason. */
  private async endQueued(run: store.RunRecord, why: string): Promise<void> {
    const { app } = this;
    await app.events.write(async () => {
      if (!(await store.finishRun(app.db, run.id, { status: 'cancelled', exitCode: null, error: why, summary: null, headCommit: null, diffStat: null, now: nowIso(app.clock) }))) return;
      app.events.emit('run:finished', { runId: run.id, taskId: run.taskId, agent: run.agent, status: 'cancelled', exitCode: null, error: why, headCommit: null, usage: run.usage });
    });
  }

  // --- cancel, recovery, presence, stop

  holdStall(runId: string): () => void {
    return this.live.get(runId)?.holdStall() ?? (() => {});
  }

  async cancel(runId: string): Promise<boolean> {
    const live = this.live.get(runId);
    if (!live) return false;
    await live.end('cancelled', 'cancelled');
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
    const left = this.o.shared ? await store.unfinishedOf(app.db, this.o.id) : await store.unfinishedAnywhere(app.db);
    if (!left.length) return;
    const records = left.filter((r) => r.pid !== null && r.pidStart !== null).map((r) => ({ pid: r.pid!, startTime: r.pidStart! }));
    const killed = await reapRecorded(records, { group: true, graceMs: KILL_GRACE_MS, waitMs: 5_000 });
    if (killed.length) app.log.warn('killed agent processes a stopped daemon left running', { processes: killed.map((k) => k.pid) });
    for (const r of left) await this.loseRun(r, 'the daemon running it stopped without ending it (a crash or a kill); it is started again');
    app.log.warn('runs left by a daemon that stopped unexpectedly were marked lost and queued again', { runs: left.length });
  }

  /** Marks a run lost, releases its task and queues it again (in one transaction). */
  private async loseRun(r: store.RunRecord, why: string): Promise<void> {
    const { app } = this;
    await app.events.write(async () => {
      if (!(await store.finishRun(app.db, r.id, { status: 'lost', exitCode: null, error: why, summary: null, headCommit: null, diffStat: null, now: nowIso(app.clock) }))) return;
      app.events.emit('run:finished', { runId: r.id, taskId: r.taskId, agent: r.agent, status: 'lost', exitCode: null, error: why, headCommit: null, usage: r.usage });
      if (r.leaseId) await releaseClaim(app, r.taskId, r.leaseId, `run ${r.id} lost`);
      try {
        await queueRun(app, r.taskId, { agent: r.agent, reason: 'requeue' });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        app.log.warn('a lost run could not be queued again', { runId: r.id, error: err.message });
      }
    });
  }

  /** Says this runner is alive, takes over the runs of runners that went silent, and ends runs cancelled through another daemon. */
  private async presenceTick(): Promise<void> {
    const { app } = this;
    if (this.closing) return;
    try {
      const silentMs = this.config.offlineAfterSec * 1000;
      const alive = await app.events.write(async () => await store.touchRunner(app.db, this.o.id, this.live.size, systemClock.now()));
      if (!alive) await this.rejoin();
      for (const gone of await store.silentRunners(app.db, systemClock.now() - silentMs, this.o.id)) await this.takeOver(gone.id, gone.host);
      await this.cancelRequested();
    } catch (err) {
      app.log.warn('the runner could not write its presence; trying again', errorFields(err));
    }
    this.presence = setTimeout(() => void this.presenceTick(), this.config.heartbeatSec * 1000).unref();
  }

  /**
   * Another daemon took this runner for gone (it was silent too long: suspended, or cut off from
   * the database) and queued its runs again elsewhere: the processes still running here are
   * duplicates now, so they are ended without a word in the state (their runs are already lost),
   * and the runner comes back online.
   */
  private async rejoin(): Promise<void> {
    const { app } = this;
    app.log.warn('another daemon took this runner for gone and queued its runs again; ending the processes still running here', { runs: this.live.size });
    for (const run of this.live.values()) void run.end('lost', 'its runner was taken for gone; it runs elsewhere');
    await app.events.write(async () => {
      await store.upsertRunner(app.db, { ...(await store.getRunner(app.db, this.o.id))!, seen_at: systemClock.now(), running: 0 });
      app.events.emit('runner:online', { runnerId: this.o.id, host: this.host, runtimes: (JSON.parse((await store.getRunner(app.db, this.o.id))!.runtimes) as { kind: string }[]).map((r) => r.kind) });
    });
  }

  private async takeOver(runnerId: string, host: string): Promise<void> {
    const { app } = this;
    const lost: string[] = [];
    await app.events.write(async () => {
      if (!(await store.stopRunner(app.db, runnerId, nowIso(app.clock)))) return; // another daemon came first
      for (const r of await store.unfinishedOf(app.db, runnerId)) {
        await this.loseRun(r, `its runner ${runnerId} on ${host} stopped answering; it is started again`);
        lost.push(r.id);
      }
      app.events.emit('runner:offline', { runnerId, host, reason: 'unresponsive', lostRuns: lost });
    });
  }

  /**
   * A pass now, then one every CLEAN_EVERY_MS: a periodic chore on a real timer, as the pruner's
   * (the age of a worktree is read on the daemon's clock; tests call cleanWorkspaces() themselves).
   */
  private clean(): void {
    this.cleaner = null;
    void this.cleanWorkspaces()
      .catch((err) => this.app.log.warn('removing old worktrees failed; trying again later', errorFields(err)))
      .finally(() => {
        if (!this.closing) this.cleaner = setTimeout(() => this.clean(), CLEAN_EVERY_MS).unref();
      });
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
    for (const c of await store.workspacesToClean(app.db, new Date(cutoff).toISOString(), 200)) {
      if (seen.has(c.workspace) || this.closing) continue;
      seen.add(c.workspace);
      const task = await getTask(app, c.taskId);
      if (task && task.status !== 'done') continue;
      const latest = await store.latestRunOfTask(app.db, c.taskId);
      if (latest && (latest.finishedAt === null || Date.parse(latest.finishedAt) > cutoff)) continue;
      await git.removeWorktree({ root: app.root, path: c.workspace, turn: this.gate.turn });
      await app.events.write(async () => await store.clearWorkspace(app.db, c.workspace));
      removed++;
    }
    if (removed) app.log.info('removed the worktrees of done tasks (their branches stay)', { worktrees: removed });
    await this.spares?.shrink();
    return removed;
  }

  /** A cancel asked through another daemon (shared state) of a run this one runs. */
  private async cancelRequested(): Promise<void> {
    for (const id of await store.cancelRequestedOf(this.app.db, this.o.id)) void this.cancel(id);
  }

  /**
   * Stops: no new runs; live ones are ended (SIGTERM, SIGKILL after a short grace), marked lost and
   * queued again, so the next start (or another runner) resumes their sessions.
   */
  async close(): Promise<void> {
    const { app } = this;
    if (this.closing) return;
    this.closing = true;
    await this.started;
    this.unsubscribe?.();
    if (this.wake) app.clock.clearTimeout(this.wake);
    if (this.retry) clearTimeout(this.retry);
    if (this.presence) clearTimeout(this.presence);
    if (this.cleaner) clearTimeout(this.cleaner);
    await this.sparesOpen;
    await this.spares?.close();
    // A pass or an event under way finishes before the runs are ended (it may be starting one).
    await this.passing;
    await this.hearing;
    const live = [...this.live.values()];
    await Promise.all(live.map((r) => r.end('lost', 'the daemon stopped while it ran; it is started again')));
    try {
      await app.events.write(async () => {
        if ((await store.stopRunner(app.db, this.o.id, nowIso(app.clock))) && this.o.shared) {
          app.events.emit('runner:offline', { runnerId: this.o.id, host: this.host, reason: 'stopped', lostRuns: live.map((r) => r.id) });
        }
      });
    } catch (err) {
      app.log.warn('the runner could not record its stop', errorFields(err));
    }
  }
}
