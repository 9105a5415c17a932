import { join } from 'node:path';
import { AppError } from '../../kernel/errors.js';
import { monotonic } from '../../lib/clock.js';
import type { Logger } from '../../kernel/log.js';
import type { WorkerRecords } from './orphans.js';
import type { WorkerReply, WorkerRequest } from './worker.js';
import { WorkerProcess, type Job } from './worker-process.js';

// Every read and write of an application database runs in a child process that serves that one
// database: a long-lived process, spoken to with structured IPC messages, one message at a time.
// A statement that runs past data.statementTimeoutMs is stopped the only way SQLite can be
// stopped from outside: the process is killed (SIGKILL), its lock and CPU go with it, the request
// is answered 503, and a fresh process re-opens the file for the requests queued behind it. The
// daemon's own thread only sends and receives messages, so it keeps answering everything else.

const MAX_QUEUE = 256;
const IDLE_MS = 60_000;
/** Opening (and creating) a file and migrating it may take longer than one statement. */
const SLOW_MS = 60_000;
const KILL_GRACE_MS = 250;
/** How long a database keeps its worker while others wait for a slot (data.maxWorkers reached). */
const SLICE_MS = 2_000;
/** A worker asked to close (checkpoint, close its file) that has not exited by then is killed. */
const CLOSE_DEADLINE_MS = 10_000;
/** The spare after workers died at start: 0.5 s, doubling, at most 30 s. */
const RETRY_BASE_MS = 500;
const RETRY_MAX_MS = 30_000;
/** Reads sent ahead to a worker, so it goes from one to the next without waiting for the daemon. */
const PIPELINE = 32;

function repeatable(msg: WorkerRequest): boolean {
  if (msg.type === 'migrations') return true;
  if (msg.type === 'query') return msg.req.mode === 'read' && !msg.ref;
  if (msg.type === 'batch') return !msg.ref && msg.ops.every((o) => o.op === 'list' || o.op === 'get');
  return false;
}

export interface RunnerOptions {
  log: Logger;
  /** Where database files live: database `key` is `<dir>/<key>.sqlite`. */
  dir: string;
  /** Read per request: a project.json reload applies to the next statement. */
  statementTimeoutMs(): number;
  /** Told what a worker found when it (re)opened a database file. */
  onOpened?(key: string, state: unknown): void;
  /** Where live workers are written down, for the next daemon to reap after a crash. */
  records?: WorkerRecords;
  /** Worker processes at most, the spare included (data.maxWorkers); read whenever one is needed. */
  maxWorkers?(): number;
  /** What one worker may map, in MiB (data.workerMemoryMb); read at each start of a worker. */
  workerMemoryMb?(): number;
  /** The worker's entry module (default: worker.js beside this file). */
  workerEntry?: string;
  /**
   * Start the first spare this long after the runner, not at once (the daemon: a worker process
   * started in the middle of the daemon's own start-up slowed it by a fifth on two cores). A
   * database asked for before then gets a worker started for it, as when no spare is left.
   */
  spareAfterMs?: number;
}

/** A worker process as the runner keeps it: it knows the lane it serves. */
type Worker = WorkerProcess<Lane>;

/** The queue and the worker process of one database. */
class Lane {
  queue: Job[] = [];
  worker: Worker | null = null;
  lastUsed = monotonic();
  /** A pump is due at setImmediate: requests and answers of one event-loop turn go out together. */
  pumpDue = false;
  /** Being deleted: new requests are refused, so nothing can queue behind the final close. */
  retiring = false;
  /** When it got its worker: past SLICE_MS, with other databases waiting for a slot, it hands it on. */
  since = 0;

  constructor(
    readonly key: string,
    readonly file: string,
  ) {}
}

export class DataRunner {
  private readonly lanes = new Map<string, Lane>();
  /** Every worker process not yet gone: serving a lane, the spare, or closing. */
  private readonly live = new Set<Worker>();
  /** Lanes with requests and no worker, in the order they began to wait (data.maxWorkers reached). */
  private readonly waiting = new Set<Lane>();
  private spare: Worker | null = null;
  /** Workers closing (evicted, or handing their slot on), by database: a delete waits for them. */
  private readonly closingOf = new Map<string, Worker>();
  /** Workers that died before their first message, in a row: the next spare waits longer. */
  private failedStarts = 0;
  private retryAt = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private firstSpare: NodeJS.Timeout | null = null;
  private seq = 0;
  private closed = false;
  private readonly sweeper: NodeJS.Timeout;
  /** Pids of workers killed at the time limit (tests check their CPU was released). */
  readonly killed: number[] = [];

  constructor(private readonly opts: RunnerOptions) {
    this.sweeper = setInterval(() => this.sweep(), 10_000);
    this.sweeper.unref();
    if (opts.spareAfterMs) {
      this.firstSpare = setTimeout(() => {
        this.firstSpare = null;
        this.refillSpare();
      }, opts.spareAfterMs);
      this.firstSpare.unref();
    } else {
      this.spare = this.spawn();
    }
  }

  /** The file of database `key` (keys are the registry's UUIDs, never caller text). */
  fileOf(key: string): string {
    return join(this.opts.dir, `${key}.sqlite`);
  }

  /** Sends one request to the worker of database `key`, queued behind earlier ones. */
  call<T>(key: string, msg: WorkerRequest, opts: { slow?: boolean } = {}): Promise<T> {
    if (this.closed) return Promise.reject(new AppError('data_unavailable', 'The daemon is shutting down.'));
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = new Lane(key, this.fileOf(key))));
    if (lane.retiring) return Promise.reject(new AppError('data_not_found', 'The database was deleted.'));
    if (lane.queue.length >= MAX_QUEUE) return Promise.reject(new AppError('data_unavailable', 'Too many requests are waiting for this database; retry shortly.', { headers: { 'Retry-After': '1' } }));
    const timeoutMs = opts.slow ? Math.max(SLOW_MS, this.opts.statementTimeoutMs()) : this.opts.statementTimeoutMs();
    return this.enqueue<T>(lane, msg, timeoutMs);
  }

  private enqueue<T>(lane: Lane, msg: WorkerRequest, timeoutMs: number): Promise<T> {
    lane.lastUsed = monotonic();
    return new Promise<T>((resolve, reject) => {
      lane.queue.push({ id: ++this.seq, msg, repeatable: repeatable(msg), timeoutMs, resolve: resolve as (v: unknown) => void, reject });
      // An idle worker gets the request at once; a busy one gets it with the others of this turn.
      if (lane.worker?.inflight.length) this.pumpSoon(lane);
      else this.pump(lane);
    });
  }

  /** Closes the database's worker (before its file is deleted); queued requests are refused. */
  async retire(key: string): Promise<void> {
    // A worker closed to make room may still be checkpointing this file: the delete waits for it.
    const closing = this.closingOf.get(key);
    if (closing && !closing.dead) await new Promise((r) => closing.proc.once('close', r));
    const lane = this.lanes.get(key);
    if (!lane) return;
    // Requests still waiting were sent before the delete; they find the database gone, and so
    // does any that comes while the worker closes the file.
    lane.retiring = true;
    this.waiting.delete(lane);
    for (const j of lane.queue.splice(0)) j.reject(new AppError('data_not_found', 'The database was deleted.'));
    if (lane.worker && !lane.worker.dead) await this.enqueue(lane, { type: 'close' }, SLOW_MS).catch(() => undefined);
    lane.worker?.kill();
    this.detach(lane);
    this.lanes.delete(key);
  }

  /** Requests of database `key` sent to its worker and not yet answered (tests and diagnostics). */
  inflight(key: string): number {
    return this.lanes.get(key)?.worker?.inflight.length ?? 0;
  }

  /** Pid of the worker serving `key`, if one is running (tests and diagnostics). */
  pidOf(key: string): number | undefined {
    return this.lanes.get(key)?.worker?.proc.pid;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.firstSpare) clearTimeout(this.firstSpare);
    for (const lane of this.lanes.values()) for (const j of lane.queue.splice(0)) j.reject(new AppError('data_unavailable', 'The daemon is shutting down.'));
    this.waiting.clear();
    const exits: Promise<void>[] = [];
    for (const w of this.live) {
      if (w.dead) continue;
      exits.push(
        new Promise<void>((resolve) => {
          // Killed at the deadline; 'close' follows at once.
          const t = setTimeout(() => w.kill(), 3000);
          // 'close' rather than 'exit': its pipes are closed too, so nothing of it outlives close().
          w.proc.once('close', () => {
            clearTimeout(t);
            resolve();
          });
          // The spare has nothing to close. An idle worker checkpoints and closes its file; a busy
          // one (or one already closing) is killed at the deadline unless it is done by then.
          if (w === this.spare) w.kill();
          else if (w.lane && !w.inflight.length) w.sendClose();
        }),
      );
    }
    await Promise.all(exits);
    this.lanes.clear();
    await this.opts.records?.settled();
  }

  private maxWorkers(): number {
    return Math.max(2, this.opts.maxWorkers?.() ?? 6);
  }

  /** A new worker process, or null when none can be started now (the failure is logged). */
  private spawn(): Worker | null {
    try {
      const w: Worker = new WorkerProcess(
        this.opts.log,
        this.opts.workerMemoryMb?.(),
        (w, r) => this.onReply(w, r),
        (w) => this.onExit(w),
        this.opts.records,
        this.opts.workerEntry,
      );
      this.live.add(w);
      return w;
    } catch (err) {
      this.opts.log.error('could not start a data worker', { error: (err as Error)?.message ?? String(err) });
      this.startFailed();
      return null;
    }
  }

  /** A worker could not start (or died before its first answer): the next spare waits, longer each time in a row. */
  private startFailed(): void {
    this.failedStarts++;
    this.retryAt = monotonic() + Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (this.failedStarts - 1));
  }

  /**
   * A worker for a lane that has none: the spare, a new one while under data.maxWorkers, or none
   * yet (the lane waits; the least recently used idle worker is closed to make room).
   */
  private takeWorker(): Worker | null {
    let w: Worker | null = null;
    if (this.spare && !this.spare.dead) {
      w = this.spare;
      this.spare = null;
    } else if (this.live.size < this.maxWorkers()) {
      w = this.spawn();
      if (!w) throw new AppError('data_unavailable', 'No database worker could be started; retry shortly.', { headers: { 'Retry-After': '1' } });
    } else {
      // One closing worker per waiting lane (the asking one is among them): asking again does
      // not close a second one.
      if (this.closingCount() < this.waiting.size) this.closeLeastRecentlyUsed();
      return null;
    }
    return w;
  }

  /**
   * Keeps one spare started, so a database without a worker gets one without waiting for a spawn
   * (about 300 ms). At the cap, the least recently used idle worker is closed to make room for it.
   */
  private refillSpare(): void {
    if (this.closed || this.spare || this.waiting.size) return;
    const wait = this.retryAt - monotonic();
    if (wait > 0) {
      // Workers have been dying at start (a memory limit too low, say): not a spawn per exit.
      this.retryTimer ??= setTimeout(() => {
        this.retryTimer = null;
        this.refillSpare();
      }, wait).unref();
      return;
    }
    if (this.live.size < this.maxWorkers()) this.spare = this.spawn();
    else if (!this.closingCount()) this.closeLeastRecentlyUsed();
  }

  private closingCount(): number {
    let n = 0;
    for (const w of this.live) if (w.closing) n++;
    return n;
  }

  private closeLeastRecentlyUsed(): void {
    let lru: Lane | null = null;
    for (const l of this.lanes.values()) {
      const w = l.worker;
      if (w && !w.dead && !w.inflight.length && !l.queue.length && !l.retiring && (!lru || l.lastUsed < lru.lastUsed)) lru = l;
    }
    if (lru) this.closeIdle(lru);
  }

  /** An idle lane lets its worker go, and is forgotten until its next request. */
  private closeIdle(lane: Lane): void {
    this.letGo(lane);
    this.lanes.delete(lane.key);
  }

  /**
   * The lane's worker checkpoints, closes its file and exits, freeing its slot; one that has not
   * exited within CLOSE_DEADLINE_MS (stopped, stuck) is killed.
   */
  private letGo(lane: Lane): void {
    const w = lane.worker!;
    this.detach(lane);
    w.closing = true;
    this.closingOf.set(lane.key, w);
    const deadline = setTimeout(() => w.kill(), CLOSE_DEADLINE_MS).unref();
    w.proc.once('close', () => {
      clearTimeout(deadline);
      if (this.closingOf.get(lane.key) === w) this.closingOf.delete(lane.key);
    });
    w.sendClose();
  }

  /**
   * A lane that has held its worker for SLICE_MS while other databases wait for a slot gives it
   * up and waits behind them with what it still has queued: a database written without pause
   * must not keep the others waiting for ever.
   */
  private handOver(lane: Lane): void {
    this.letGo(lane);
    this.waiting.add(lane);
  }

  /** A slot freed: lanes that wait get workers, oldest first; then the spare, if there is room. */
  private wake(): void {
    for (const lane of [...this.waiting]) {
      if (this.closed || (this.live.size >= this.maxWorkers() && !(this.spare && !this.spare.dead))) break;
      this.waiting.delete(lane);
      this.pump(lane);
    }
    this.refillSpare();
  }

  /** The lane lets its worker go: answers and exits of that process no longer concern it. */
  private detach(lane: Lane): void {
    if (lane.worker) lane.worker.lane = null;
    lane.worker = null;
  }

  private pump(lane: Lane): void {
    // Shutting down: what still waits (reads re-queued from a worker that died or was stopped)
    // is answered, and no worker is started for it.
    if (this.closed) return this.failQueue(lane, new AppError('data_unavailable', 'The daemon is shutting down.'));
    let w = lane.worker;
    const job = lane.queue[0];
    if (!job) return;
    // Dead and not yet closed ('exit' came, 'close' not yet): onExit takes its jobs and pumps.
    if (w?.dead) return;
    if (!w) {
      // A fresh worker opens the file first; the spare one is already started, so this is cheap.
      // With every slot taken the requests wait, in order, until one is free.
      this.waiting.add(lane);
      let fresh: Worker | null;
      try {
        fresh = this.takeWorker();
      } catch (err) {
        this.waiting.delete(lane);
        return this.failQueue(lane, err);
      }
      if (!fresh) return;
      this.waiting.delete(lane);
      this.refillSpare();
      w = fresh;
      lane.worker = w;
      lane.since = monotonic();
      w.lane = lane;
      if (job.msg.type !== 'open') {
        lane.queue.unshift({
          id: ++this.seq,
          msg: { type: 'open', file: lane.file },
          repeatable: false,
          timeoutMs: SLOW_MS,
          resolve: (v) => this.opts.onOpened?.(lane.key, v),
          reject: (e) => this.openFailed(lane, e),
        });
      }
    } else if (this.waiting.size && !lane.retiring && monotonic() - lane.since > SLICE_MS) {
      // Its turn is over while others wait: no more jobs to this worker; once it is done with
      // those it has, the slot goes on.
      if (!w.inflight.length) this.handOver(lane);
      return;
    }
    // One job at a time, except that reads may queue up behind reads (or behind the open): if
    // the one running is stopped, those not yet started are simply sent again.
    // Only repeatable jobs are ever sent behind another, so those after the first always are.
    const head = w.inflight[0];
    let readsMayFollow = !head || head.repeatable || head.msg.type === 'open';
    const out: Job[] = [];
    while (lane.queue.length) {
      const next = lane.queue[0]!;
      if (w.inflight.length && (!next.repeatable || !readsMayFollow || w.inflight.length >= PIPELINE)) break;
      lane.queue.shift();
      w.inflight.push(next);
      if (w.inflight.length === 1) {
        readsMayFollow = next.repeatable || next.msg.type === 'open';
        this.arm(lane, w);
      }
      out.push(next);
    }
    if (out.length) w.send(out);
  }

  private pumpSoon(lane: Lane): void {
    if (lane.pumpDue) return;
    lane.pumpDue = true;
    setImmediate(() => {
      lane.pumpDue = false;
      this.pump(lane);
    });
  }

  /** The time limit runs for the job the worker is on now: the first one in flight. */
  private arm(lane: Lane, w: Worker): void {
    const head = w.inflight[0];
    // The worker rolls back a write that reaches its commit after timeoutMs; the kill comes a
    // little later, so a write is either answered or not kept, never kept and answered 503.
    const ms = head ? head.timeoutMs + KILL_GRACE_MS : 0;
    if (w.timer && head && ms === w.timerMs) {
      w.timer.refresh(); // restarted from now; timeout() checks which job is still first
      return;
    }
    if (w.timer) clearTimeout(w.timer);
    w.timerMs = ms;
    w.timer = head ? setTimeout(() => this.timeout(lane, w), ms) : null;
  }

  private onReply(w: Worker, r: WorkerReply): void {
    this.failedStarts = 0;
    const job = w.inflight[0];
    if (!job || job.id !== r.id) return;
    w.inflight.shift();
    const lane = w.lane;
    if (lane) this.arm(lane, w);
    else if (w.timer) clearTimeout(w.timer);
    if (r.ok) job.resolve(r.value);
    else {
      if (r.internal) this.opts.log.error('data worker error', { error: r.internal });
      job.reject(new AppError(r.error.code, r.error.message, { details: r.error.details }));
    }
    if (this.closed) {
      // Done with its last request while the daemon shuts down: it checkpoints and closes its
      // file now instead of being killed at the end of the grace period.
      if (!w.inflight.length) w.sendClose();
      return;
    }
    if (lane) {
      lane.lastUsed = monotonic();
      // An idle worker gets its next request now, before the daemon turns to the answer just
      // resolved (a batch's JSON can take a millisecond); a busy one is refilled in one message
      // for all the answers read from the channel together.
      if (w.inflight.length) this.pumpSoon(lane);
      else this.pump(lane);
      // Done, with another database waiting for a slot: this one makes room.
      if (lane.worker === w && !w.inflight.length && !lane.queue.length && this.waiting.size > this.closingCount()) this.closeIdle(lane);
    }
  }

  /** Takes a dead worker's jobs: the running one fails, reads waiting behind it go back to the queue. */
  private orphaned(lane: Lane, w: Worker): Job | undefined {
    if (w.timer) clearTimeout(w.timer);
    w.timer = null;
    const [head, ...rest] = w.inflight.splice(0);
    lane.queue.unshift(...rest);
    this.detach(lane);
    return head;
  }

  private timeout(lane: Lane, w: Worker): void {
    const job = w.inflight[0];
    if (!job || lane.worker !== w) return;
    if (w.proc.pid) this.killed.push(w.proc.pid);
    w.kill();
    this.orphaned(lane, w);
    this.opts.log.warn('data statement stopped at the time limit', { ms: job.timeoutMs, pid: w.proc.pid });
    job.reject(new AppError('data_unavailable', `The statement ran longer than ${job.timeoutMs} ms (data.statementTimeoutMs) and was stopped; nothing it did was kept.`));
    this.pump(lane);
  }

  private onExit(w: Worker): void {
    this.live.delete(w);
    if (w === this.spare) this.spare = null;
    if (!w.answered && !w.killedByUs && !w.closing && !this.closed) this.startFailed();
    // Only the lane it still serves: a lane it was detached from has another worker, or none.
    const lane = w.lane?.worker === w ? w.lane : null;
    const job = lane ? this.orphaned(lane, w) : undefined;
    if (job) {
      // One line for the exit, with what it printed (a fatal error prints a page of stack).
      const oom = w.outOfMemory;
      this.opts.log.error(oom ? 'data worker ran out of memory during a request' : 'data worker exited during a request', {
        pid: w.proc.pid,
        code: w.proc.exitCode,
        signal: w.proc.signalCode,
        ...(w.stderr ? { stderr: w.stderr } : {}),
      });
      w.stderr = '';
      job.reject(
        oom
          ? new AppError('data_limit', `The statement needed more memory than a data worker may use (data.workerMemoryMb, ${w.memoryMb ?? '?'} MiB) and was stopped; nothing it did was kept.`)
          : new AppError('data_unavailable', 'The database worker stopped before the request finished; it was not applied. Retry.'),
      );
    }
    w.flushStderr();
    if (lane) this.pump(lane);
    this.wake();
  }

  /** The file could not be opened: what waited is refused, and the next request tries a fresh worker. */
  private openFailed(lane: Lane, e: unknown): void {
    this.failQueue(lane, e);
    const w = lane.worker;
    this.detach(lane);
    w?.kill();
  }

  private failQueue(lane: Lane, e: unknown): void {
    for (const j of lane.queue.splice(0)) j.reject(e);
  }

  private sweep(): void {
    const now = monotonic();
    for (const lane of [...this.lanes.values()]) {
      const w = lane.worker;
      if (w && !w.inflight.length && !lane.queue.length && now - lane.lastUsed > IDLE_MS) this.closeIdle(lane);
    }
  }
}
