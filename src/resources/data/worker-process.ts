import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../kernel/log.js';
import { compiledEntry } from '../../lib/entry.js';
import { EXE_ENTRY_ENV, inExe } from '../../lib/exe.js';
import type { WorkerRecords } from './orphans.js';
import type { WorkerEnvelope, WorkerReply, WorkerRequest } from './worker.js';

// One data worker as a process, seen from the daemon (worker.ts is the other side): how it is
// started (its entry, its memory limit, its priority, an environment without secrets), what it
// printed, and how requests are sent to it. Which database it serves, and when, is the runner's
// business (sql-runner.ts).

/** The compiled worker (from dist/ under the test runner, whose modules are TypeScript). */
const WORKER = fileURLToPath(compiledEntry(import.meta.url, './worker.js'));

/** A request on its way to a worker, and how its caller is answered. */
export interface Job {
  id: number;
  msg: WorkerRequest;
  /** Safe to run again (a read without an idempotency record): may be pipelined, and re-sent. */
  repeatable: boolean;
  timeoutMs: number;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

/** A worker's own JavaScript heap: answers are at most a few MiB of rows, SQLite's memory is outside it. */
const v8HeapMb = (memoryMb: number) => Math.max(64, Math.floor(memoryMb / 3));

/**
 * KiB of executable memory a worker maps writable at start: Node 24's V8, on a CPU without memory
 * protection keys, maps each isolate's whole code range (512 MiB) read-write-execute up front, and
 * RLIMIT_DATA counts that reservation although none of it is used until code is compiled (Node 20
 * and 22 map a few hundred KiB so). A worker runs the same node on the same CPU and has two
 * isolates (its main thread and the watchdog thread, worker-watchdog.ts), so two code ranges are
 * added to the worker's limit: without them no worker starts under 384 MiB on Node 24.
 * One isolate's range is read from this process's largest such mapping, never from their sum:
 * the daemon's own threads (the webhook delivery thread, started at the first delivery) come and go.
 */
export const WORKER_ISOLATES = 2;
let codeReservedKb: number | undefined;
function codeReserved(): number {
  if (codeReservedKb !== undefined) return codeReservedKb;
  let maps = '';
  try {
    maps = readFileSync('/proc/self/maps', 'utf8');
  } catch {
    // no /proc: the limit is the configured one
  }
  return (codeReservedKb = workerCodeReserveKb(maps));
}

/** The code reservation (KiB) a worker needs, from `/proc/<pid>/maps` text of a process running the same node. */
export function workerCodeReserveKb(maps: string): number {
  let largest = 0;
  for (const line of maps.split('\n')) {
    const [range, perms, , , inode] = line.split(/\s+/);
    if (perms !== 'rwxp' || inode !== '0' || !range) continue;
    const [from, to] = range.split('-').map((x) => parseInt(x, 16));
    largest = Math.max(largest, (to! - from!) / 1024);
  }
  return Math.ceil(largest) * WORKER_ISOLATES;
}

/**
 * Starts a worker process. On Linux its memory is capped by the kernel (RLIMIT_DATA, set by a
 * shell that then becomes the worker with exec, so the pid is the worker's): SQLite is built
 * without memory statistics, in Node (node:sqlite) as in better-sqlite3 12 (SQLITE_DEFAULT_MEMSTATUS=0),
 * so sqlite3_hard_heap_limit is not in force, and a
 * statement could otherwise take the machine's memory. Past the cap SQLite's allocations fail
 * (SQLITE_NOMEM, answered 413) or V8's do (the process aborts; also answered 413).
 */
function forkWorker(memoryMb: number | undefined, entry: string = WORKER): ChildProcess {
  let nodeArgs = [...profilerArgs(process.execArgv), `--max-old-space-size=${v8HeapMb(memoryMb ?? 768)}`];
  const env = workerEnv();
  if (inExe() && entry === WORKER) {
    // The single executable is the worker too (src/exe/main.ts starts it by this variable); it
    // takes its arguments as svc's own, so node's options go by NODE_OPTIONS.
    env[EXE_ENTRY_ENV] = 'data-worker';
    // A V8 flag of its own makes V8 reject the executable's code cache (built without it), and
    // Node warns so on every start; the worker parses its script instead, which is all it costs.
    env.NODE_OPTIONS = [...nodeArgs, '--no-warnings'].join(' ');
    nodeArgs = [];
    entry = 'data-worker';
  }
  // 'advanced': V8's serialiser, so an answer's JSON bytes cross as one Buffer (a copy), where
  // 'json' would parse them again on the daemon's event loop.
  const common = { env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] as ('ignore' | 'pipe' | 'ipc')[], serialization: 'advanced' as const };
  if (memoryMb === undefined || process.platform !== 'linux') {
    const child = fork(entry, [], { ...common, execArgv: nodeArgs });
    try {
      if (child.pid) setPriority(child.pid, WORKER_NICE);
    } catch {
      // not permitted here: it runs at the daemon's priority
    }
    return child;
  }
  return fork(entry, [], {
    ...common,
    execPath: '/bin/sh',
    // sh -c SCRIPT $0 $@: the limit in KiB, then node and its arguments (fork appends worker.js).
    // Niced here, before node starts its threads (nice is per thread on Linux).
    execArgv: [
      '-c',
      `ulimit -d "$0" || echo "svc: the data worker runs without its memory limit" >&2; command -v nice >/dev/null && exec nice -n ${WORKER_NICE} "$@"; exec "$@"`,
      String(memoryMb * 1024 + codeReserved()),
      process.execPath,
      ...nodeArgs,
    ],
  });
}

/**
 * Lower than the daemon (0): caller SQL yields the CPU to the daemon's own thread, so on a machine
 * with few cores a worker busy serialising large answers does not slow task reads, SSE and the
 * other databases' replies.
 */
const WORKER_NICE = 5;

/** What V8 and SQLite print when an allocation fails. */
const OUT_OF_MEMORY = /out of memory|allocation failed|heap limit/i;
/** Kept of a worker's stderr for one log line; a fatal error prints 13 to 20 lines of stack. */
const STDERR_KEPT = 2000;

/** The daemon's environment without anything secret-looking: the worker needs none of it. */
function workerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/KEY|TOKEN|SECRET|PASS|CREDENTIAL/i.test(k)) env[k] = v;
  env.SVC_DAEMON_PID = String(process.pid);
  return env;
}

/** A daemon started under --cpu-prof (npm run bench with BENCH_CPU_PROF) profiles its workers too. */
export function profilerArgs(execArgv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i]!;
    if (!a.startsWith('--cpu-prof')) continue;
    out.push(a);
    // --cpu-prof-dir /x (two words): the value comes along.
    if (a !== '--cpu-prof' && !a.includes('=') && i + 1 < execArgv.length) out.push(execArgv[++i]!);
  }
  return out;
}

export class WorkerProcess<L> {
  proc: ChildProcess;
  /** Sent and not yet answered, in order; the first is the one running. */
  inflight: Job[] = [];
  timer: NodeJS.Timeout | null = null;
  /** The duration `timer` was armed with, so the next job of the same limit just refreshes it. */
  timerMs = 0;
  /** The lane this worker serves (none while it is the spare, or after it was let go). */
  lane: L | null = null;
  dead = false;
  /** Being closed to make room for another database: it takes no more requests. */
  closing = false;
  /** It sent at least one message: it started (a worker that dies before is a failed start). */
  answered = false;
  /** Killed by the daemon (time limit, shutdown), not dead by itself. */
  killedByUs = false;
  /** What it printed since its last log line (bounded): logged as one line, not one per chunk. */
  stderr = '';
  private stderrTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly log: Logger,
    readonly memoryMb: number | undefined,
    onReply: (w: WorkerProcess<L>, r: WorkerReply) => void,
    onExit: (w: WorkerProcess<L>) => void,
    records?: WorkerRecords,
    entry?: string,
  ) {
    this.proc = forkWorker(memoryMb, entry);
    records?.add(this.proc.pid);
    this.proc.stderr?.setEncoding('utf8');
    this.proc.stderr?.on('data', (chunk: string) => {
      if (this.stderr.length < STDERR_KEPT) this.stderr += chunk.slice(0, STDERR_KEPT - this.stderr.length);
      // A worker that goes on living has its text logged a second later, in one line.
      this.stderrTimer ??= setTimeout(() => this.flushStderr(), 1000).unref();
    });
    this.proc.on('message', (r: WorkerReply) => {
      this.answered = true;
      onReply(this, r);
    });
    this.proc.on('exit', () => {
      this.dead = true;
      records?.remove(this.proc.pid);
    });
    // 'close' comes after 'exit' once its stderr is read to the end: the exit is judged on all of it.
    this.proc.on('close', () => {
      this.dead = true;
      if (this.stderrTimer) clearTimeout(this.stderrTimer);
      onExit(this);
    });
    this.proc.on('error', () => undefined);
  }

  /** Whether what it printed says an allocation failed. */
  get outOfMemory(): boolean {
    return OUT_OF_MEMORY.test(this.stderr);
  }

  flushStderr(): void {
    if (this.stderrTimer) clearTimeout(this.stderrTimer);
    this.stderrTimer = null;
    if (this.stderr) this.log.warn('data worker stderr', { pid: this.proc.pid, text: this.stderr });
    this.stderr = '';
  }

  kill(): void {
    this.killedByUs = true;
    if (!this.dead) this.proc.kill('SIGKILL');
  }

  /** Asks it to checkpoint and close its file, then exit. */
  sendClose(): void {
    this.send([{ id: 0, msg: { type: 'close' }, timeoutMs: 0 }]);
  }

  /** One IPC message for any number of requests: each message costs a write and a parse on both sides. */
  send(jobs: Pick<Job, 'id' | 'msg' | 'timeoutMs'>[]): void {
    this.proc.send(jobs.map((j): WorkerEnvelope => ({ id: j.id, timeoutMs: j.timeoutMs, ...j.msg })));
  }
}
