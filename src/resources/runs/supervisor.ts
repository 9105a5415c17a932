import { spawn, type ChildProcess } from 'node:child_process';
import { stat } from 'node:fs';
import type { Readable } from 'node:stream';
import type { Clock } from '../../lib/clock.js';
import { lowerPriority, startTimeOf } from '../../lib/proc.js';
import { groupAlive } from '../../lib/reap.js';
import { LineSplitter } from './lines.js';
import type { ProcessExit, SuperviseOptions, Supervised } from './types.js';

// One agent CLI as a supervised process: its own process group (spawned detached, never through a
// shell), its prompt on stdin, its stdout and stderr read as lines, ended when it falls silent
// (stallMs), runs too long (timeoutMs) or is cancelled: stdin closed, SIGTERM to the group, SIGKILL
// to the group killGraceMs later. It ends when the group does, not when the leader does: a CLI's
// tool children (a test run, a dev server started in the background) would otherwise outlive the
// run, so a leader that exits by itself leaves the rest of its group to the same sequence.
//
// Bounds. Memory per stream: one unfinished line (at most maxLineBytes), the chunk being split
// (at most the stream's read size, 64 KiB) and what Node holds before it (its highWaterMark,
// 16 KiB on Node 20, 64 KiB from 22). A line callback that returns a promise holds the stream's
// reading until it settles; the child then blocks on a full pipe (64 KiB in the kernel), so a slow
// consumer slows the CLI down instead of growing a queue. The stall timer does not count the time
// the consumer holds a stream: silence is the CLI's, not ours.
//
// Time. The stall, total and kill-grace timers run on the injected Clock. Waiting for the group to
// be gone is an observation of the OS (kill(-pid, 0), then /proc for zombies), polled on real
// timers (2 ms doubling to 100 ms); after SIGKILL it gives up after GONE_POLLS_AFTER_KILL polls
// (about 5 s: a process in uninterruptible sleep), resolving all the same.

const POLL_FIRST_MS = 2;
const POLL_MAX_MS = 100;
const GONE_POLLS_AFTER_KILL = 55;
/** setTimeout's ceiling: a later deadline is reached by waking early and looking again. */
const MAX_DELAY_MS = 2 ** 31 - 1;

export function supervise(opts: SuperviseOptions, clock: Clock): Supervised {
  let child: ChildProcess;
  try {
    child = spawn(opts.command, opts.args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  } catch (err) {
    // Arguments Node refuses before asking the OS (a NUL byte in an argument, say).
    return failed(spawnFailed(err, opts));
  }
  if (child.pid === undefined) {
    // The OS refused (ENOENT, EACCES, EAGAIN): Node says so in an 'error' event on the next tick.
    for (const s of [child.stdin, child.stdout, child.stderr]) s?.on('error', noop).destroy();
    return failed(new Promise((resolve) => child.once('error', (err) => resolve(spawnFailed(err, opts)))));
  }
  // Lowered before it starts its work: the daemon (API, SSE, dispatch) stays answerable while
  // several agents and what they run (builds, tests) keep the cores busy.
  if (opts.nice) lowerPriority(child.pid, opts.nice);
  return new Run(child, child.pid, opts, clock).handle();
}

function failed(exited: Promise<ProcessExit>): Supervised {
  return { pid: null, startTime: null, exited, cancel: () => exited, hold: () => noop };
}

async function spawnFailed(err: unknown, opts: SuperviseOptions): Promise<ProcessExit> {
  const e = err as NodeJS.ErrnoException;
  let error = e?.message ?? String(err);
  // Node says "spawn <command> ENOENT" for a missing working directory too.
  if (e?.code === 'ENOENT' && !(await new Promise<boolean>((resolve) => stat(opts.cwd, (statErr) => resolve(!statErr))))) {
    error += ` (working directory ${opts.cwd} does not exist)`;
  }
  return { code: null, signal: null, reason: 'spawn_failed', error };
}

function noop(): void {}

class Run {
  private reason: ProcessExit['reason'] | null = null;
  private leader: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private stopping = false;
  /** The group is gone: its id may go to another process, so nothing is signalled any more. */
  private gone = false;
  private killSent = false;
  private killTimer: unknown = null;
  private closer: unknown = null;
  private stallTimer: unknown = null;
  private totalTimer: unknown = null;
  private lastOutput: number;
  /** Streams whose line callback is being waited for, and holds (a CLI waiting on svc): the stall timer does not run meanwhile. */
  private held = 0;
  private readonly deadline: number;
  private readonly exited: Promise<ProcessExit>;

  constructor(
    private readonly child: ChildProcess,
    private readonly pid: number,
    private readonly opts: SuperviseOptions,
    private readonly clock: Clock,
  ) {
    this.lastOutput = clock.now();
    this.deadline = this.lastOutput + opts.timeoutMs;
    const leaderExited = new Promise<void>((resolve) =>
      child.once('exit', (code, signal) => {
        this.leader = { code, signal };
        this.reason ??= 'exited';
        this.clearRunTimers();
        resolve();
      }),
    );
    child.on('error', noop); // after a successful spawn only a failed kill() reports here; we signal with process.kill
    child.stdin!.on('error', noop); // EPIPE: the CLI exited (or closed stdin) before reading its prompt
    child.stdin!.end(opts.stdin);
    const drained = Promise.all([this.readLines(child.stdout!, opts.onStdoutLine), this.readLines(child.stderr!, opts.onStderrLine)]);
    if (this.armable(opts.stallMs)) this.stallTimer = clock.setTimeout(() => this.checkStall(), Math.min(opts.stallMs, MAX_DELAY_MS));
    if (this.armable(opts.timeoutMs)) this.totalTimer = clock.setTimeout(() => this.checkTotal(), Math.min(opts.timeoutMs, MAX_DELAY_MS));
    this.exited = this.finish(leaderExited, drained);
  }

  handle(): Supervised {
    return {
      pid: this.pid,
      startTime: startTimeOf(this.pid),
      exited: this.exited,
      cancel: () => {
        this.stop('cancelled');
        return this.exited;
      },
      hold: () => {
        // Counted with the streams a consumer holds: the stall timer does not run while any is.
        this.held++;
        let released = false;
        return () => {
          if (released) return;
          released = true;
          this.held--;
          this.lastOutput = this.clock.now();
        };
      },
    };
  }

  private armable(ms: number): boolean {
    return Number.isFinite(ms) && ms > 0;
  }

  private async finish(leaderExited: Promise<void>, drained: Promise<unknown>): Promise<ProcessExit> {
    await leaderExited;
    // The leader is gone; the rest of its group goes the same way (SIGTERM, then SIGKILL).
    if (await groupAlive(this.pid)) {
      this.stop(this.reason ?? 'exited');
      let delay = POLL_FIRST_MS;
      let afterKill = 0;
      while ((await groupAlive(this.pid)) && !(this.killSent && ++afterKill > GONE_POLLS_AFTER_KILL)) {
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, POLL_MAX_MS);
      }
    }
    this.gone = true;
    this.clearTimer('killTimer');
    // A process that left the group (setsid) may still hold the pipes: they are closed after a grace.
    if (!this.streamsClosed()) this.closer = this.clock.setTimeout(() => this.closeStreams(), Math.min(Math.max(this.opts.killGraceMs, 0), MAX_DELAY_MS));
    await drained;
    this.clearTimer('closer');
    return { code: this.leader!.code, signal: this.leader!.signal, reason: this.reason ?? 'exited', error: null };
  }

  /** Stall, timeout, cancel, or the leader gone with its group still there: the same sequence. */
  private stop(reason: ProcessExit['reason']): void {
    this.reason ??= reason;
    if (this.stopping || this.gone) return;
    this.stopping = true;
    this.clearRunTimers();
    this.child.stdin!.destroy();
    this.signalGroup('SIGTERM');
    this.killTimer = this.clock.setTimeout(
      () => {
        this.killTimer = null;
        this.killSent = true;
        this.signalGroup('SIGKILL');
      },
      Math.min(Math.max(this.opts.killGraceMs, 0), MAX_DELAY_MS),
    );
  }

  private signalGroup(sig: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, sig);
    } catch {
      // ESRCH: the group is gone already
    }
  }

  private checkStall(): void {
    this.stallTimer = null;
    if (this.stopping || this.leader) return;
    const now = this.clock.now();
    const silent = now - this.lastOutput;
    if (this.held === 0 && silent >= this.opts.stallMs) return this.stop('stalled');
    const wait = this.held > 0 ? this.opts.stallMs : this.opts.stallMs - silent;
    this.stallTimer = this.clock.setTimeout(() => this.checkStall(), Math.min(wait, MAX_DELAY_MS));
  }

  private checkTotal(): void {
    this.totalTimer = null;
    if (this.stopping || this.leader) return;
    const left = this.deadline - this.clock.now();
    if (left <= 0) return this.stop('timed_out');
    this.totalTimer = this.clock.setTimeout(() => this.checkTotal(), Math.min(left, MAX_DELAY_MS));
  }

  private clearRunTimers(): void {
    this.clearTimer('stallTimer');
    this.clearTimer('totalTimer');
  }

  private clearTimer(name: 'stallTimer' | 'totalTimer' | 'killTimer' | 'closer'): void {
    if (this[name] !== null) this.clock.clearTimeout(this[name]);
    this[name] = null;
  }

  private streamsClosed(): boolean {
    return this.child.stdout!.destroyed && this.child.stderr!.destroyed;
  }

  /** Closes pipes still open a grace after the group is gone; not while a consumer holds them (it has lines to read). */
  private closeStreams(): void {
    this.closer = null;
    if (this.held > 0) {
      this.closer = this.clock.setTimeout(() => this.closeStreams(), Math.min(Math.max(this.opts.killGraceMs, 0), MAX_DELAY_MS));
      return;
    }
    this.child.stdout!.destroy();
    this.child.stderr!.destroy();
  }

  /** Reads `stream` to its end, handing each line on; resolves once the last one was handed on. */
  private async readLines(stream: Readable, onLine: (line: string) => void | Promise<unknown>): Promise<void> {
    const lines = new LineSplitter(this.opts.maxLineBytes);
    const deliver = async (batch: string[]) => {
      for (const line of batch) {
        let r: unknown;
        try {
          r = onLine(line);
        } catch {
          continue; // a consumer's bug must not end the run or the daemon
        }
        if (r && typeof (r as Promise<unknown>).then === 'function') {
          this.held++;
          try {
            await r;
          } catch {
            // as above
          } finally {
            this.held--;
            this.lastOutput = this.clock.now();
          }
        }
      }
    };
    try {
      for await (const chunk of stream) {
        this.lastOutput = this.clock.now();
        await deliver(lines.push(chunk as Buffer));
      }
    } catch {
      // destroyed (a pipe held by a process that left the group): what was read is handed on below
    }
    await deliver(lines.end());
  }
}
