import { mkdir as mkdirCb, readdir as readdirCb, readFile as readFileCb, rm as rmCb, writeFile as writeFileCb } from 'node:fs';
import { promisify } from 'node:util';
import { join } from 'node:path';
import type { Logger } from '../../kernel/log.js';
import { isSameProcess, startTimeOf } from '../../lib/proc.js';
import { reapRecorded, type RecordedProcess } from '../../lib/reap.js';

// A data worker dies by itself within a second of its daemon (worker-watchdog.ts). One that
// cannot (stopped with SIGSTOP, or stuck in the kernel) would keep its database's write lock across
// a restart, so each worker is also written down, by pid and start time, in .svc/workers/<pid>, and
// a daemon starting after a crash kills those of dead daemons. Never by name: a pid may have gone
// to another process since, and then its start time differs.

// The callback forms: fs/promises keeps a FileHandle object for each write until it is collected,
// so a daemon that has closed would still hold handles (test/daemon-start.test.ts counts them).
const [mkdir, readdir, readFile, rm, writeFile] = [promisify(mkdirCb), promisify(readdirCb), promisify(readFileCb), promisify(rmCb), promisify(writeFileCb)];

interface Record_ {
  /** The daemon that started the worker. */
  daemon: { pid: number; start: string };
  start: string;
}

/** The daemon's list of its live workers, on disk. Writes go off the event loop, in order per pid. */
export class WorkerRecords {
  private readonly daemon: { pid: number; start: string } | null;
  private readonly pending = new Map<number, Promise<unknown>>();
  private ready: Promise<unknown>;

  constructor(private readonly dir: string) {
    const start = startTimeOf(process.pid);
    this.daemon = start ? { pid: process.pid, start } : null;
    this.ready = this.daemon ? mkdir(dir, { recursive: true, mode: 0o700 }).catch(() => undefined) : Promise.resolve();
  }

  add(pid: number | undefined): void {
    if (!this.daemon || !pid) return;
    const start = startTimeOf(pid);
    if (!start) return; // already gone
    const rec: Record_ = { daemon: this.daemon, start };
    this.chain(pid, () => writeFile(join(this.dir, String(pid)), JSON.stringify(rec), { mode: 0o600 }));
  }

  remove(pid: number | undefined): void {
    if (!this.daemon || !pid) return;
    this.chain(pid, () => rm(join(this.dir, String(pid)), { force: true }));
  }

  /** Resolves once every record written or removed so far is on disk (close, tests). */
  async settled(): Promise<void> {
    await Promise.all(this.pending.values());
  }

  private chain(pid: number, step: () => Promise<unknown>): void {
    const before = this.pending.get(pid) ?? this.ready;
    const p = before.then(step).catch(() => undefined);
    this.pending.set(pid, p);
    void p.then(() => {
      if (this.pending.get(pid) === p) this.pending.delete(pid);
    });
  }
}

/**
 * Kills the workers written down by daemons that are no longer running, and forgets their records.
 * Returns the pids killed. Waits (up to `waitMs`) until they are gone, so that their locks are.
 */
export async function reapOrphanWorkers(dir: string, log: Logger, waitMs = 2000): Promise<number[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const orphans: RecordedProcess[] = [];
  const forget: string[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const file = join(dir, name);
    let rec: Record_ | null = null;
    try {
      rec = parseRecord(await readFile(file, 'utf8'));
    } catch {
      // unreadable: forgotten below
    }
    // A daemon that is still running (another on this project, or one more in this process) keeps its workers.
    if (rec && (await isSameProcess(rec.daemon.pid, rec.daemon.start))) continue;
    if (rec) orphans.push({ pid: Number(name), startTime: rec.start });
    forget.push(file);
  }
  // SIGKILL at once: a worker stopped with SIGSTOP would never act on SIGTERM.
  const killed = await reapRecorded(orphans, { group: false, graceMs: 0, waitMs });
  for (const file of forget) await rm(file, { force: true });
  if (killed.length) log.warn('killed data workers left by a daemon that is gone', { pids: killed.map((k) => k.pid) });
  return killed.map((k) => k.pid);
}

function parseRecord(text: string): Record_ | null {
  const v = JSON.parse(text) as Partial<Record_> | null;
  const d = v?.daemon;
  if (!v || typeof v.start !== 'string' || !d || typeof d.pid !== 'number' || typeof d.start !== 'string') return null;
  return { daemon: { pid: d.pid, start: d.start }, start: v.start };
}
