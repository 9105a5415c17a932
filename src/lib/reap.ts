import { readdir as readdirCb, readFile as readFileCb } from 'node:fs';
import { promisify } from 'node:util';
import { systemClock, type Clock } from './clock.js';
import { isSameProcess, parseStartTime, statFields } from './proc.js';

// Ending processes a daemon started and may have left behind (a data worker, an agent's CLI and
// the process group it leads), always by pid AND start time, never by name: a pid may have gone to
// another process since, and then its start time differs. Linux only for the start times: where
// there is no /proc, nothing is recognised and nothing is killed.

// The callback forms: fs/promises keeps a FileHandle object for each read until it is collected.
const [readdir, readFile] = [promisify(readdirCb), promisify(readFileCb)];

/** A process as recorded when it was started: its pid and /proc start time (lib/proc.ts). */
export interface RecordedProcess {
  pid: number;
  startTime: string;
}

/**
 * The live members of process group `pgid` with their start times (zombies left out), or null
 * where there is no /proc. Reads every /proc/<pid>/stat: a few ms of I/O off the event loop.
 */
export async function groupMembers(pgid: number): Promise<{ pid: number; startTime: string }[] | null> {
  let names: string[];
  try {
    names = await readdir('/proc');
  } catch {
    return null;
  }
  const out: { pid: number; startTime: string }[] = [];
  const want = String(pgid);
  await Promise.all(
    names.map(async (name) => {
      if (!/^\d+$/.test(name)) return;
      try {
        const stat = await readFile(`/proc/${name}/stat`, 'utf8');
        const f = statFields(stat);
        const start = parseStartTime(stat);
        if (f?.[2] === want && f[0] !== 'Z' && f[0] !== 'X' && start) out.push({ pid: Number(name), startTime: start });
      } catch {
        // gone meanwhile
      }
    }),
  );
  return out;
}

/**
 * Whether any process of group `pgid` still runs. kill(-pgid, 0) answers for zombies too, and an
 * orphan's zombie waits for init, which may collect it seconds later (this machine's init: ~1.5 s):
 * when the signal says "someone", /proc says whether anyone is more than a zombie.
 */
export async function groupAlive(pgid: number): Promise<boolean> {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  const members = await groupMembers(pgid);
  return members === null || members.length > 0;
}

/**
 * Whether `rec`'s process group is still the one its recorded leader started. While the leader
 * lives, it is when the leader is (pid and start time). Once the leader is gone its children may
 * live on in its group: the group's id cannot go to another process while any member holds it, so
 * a group of that id with no leader, whose members all started after the recorded leader, is what
 * is left of it. (The one case this misreads needs our whole group to die, the pid to be handed
 * to a process that makes its own group and dies before its children, all before the reap.)
 */
export async function isSameGroup(rec: RecordedProcess): Promise<boolean> {
  if (await isSameProcess(rec.pid, rec.startTime)) return true;
  const members = await groupMembers(rec.pid);
  if (!members?.length) return false;
  const start = BigInt(rec.startTime);
  return members.every((m) => m.pid !== rec.pid && BigInt(m.startTime) >= start);
}

export interface ReapOptions {
  /** Signal the process group the recorded process leads (an agent's CLI), not the process alone. */
  group: boolean;
  /** SIGTERM, then SIGKILL after this long; 0: SIGKILL at once. */
  graceMs: number;
  /** After SIGKILL, how long to wait until they are gone (what they hold, locks and files, with them). */
  waitMs: number;
  clock?: Clock;
}

/** Looking again after 5 ms, doubling up to 100 ms: most processes die within a few ms of their signal. */
const POLL_FIRST_MS = 5;
const POLL_MAX_MS = 100;

/**
 * Ends the recorded processes (or groups) that are still themselves: SIGTERM, then SIGKILL to
 * those left after `graceMs`, then waits up to `waitMs` until they are gone. Every record is checked
 * again before each signal. Returns the records it signalled (a record whose process is gone, or
 * whose pid went to another process, is left alone). Never throws.
 */
export async function reapRecorded(records: readonly RecordedProcess[], opts: ReapOptions): Promise<RecordedProcess[]> {
  const clock = opts.clock ?? systemClock;
  const ours = (r: RecordedProcess) => (opts.group ? isSameGroup(r) : isSameProcess(r.pid, r.startTime));
  const signal = (r: RecordedProcess, sig: NodeJS.Signals) => {
    try {
      process.kill(opts.group ? -r.pid : r.pid, sig);
      return true;
    } catch {
      return false; // gone meanwhile, or not ours to signal
    }
  };
  const live = async (list: RecordedProcess[]) => (await Promise.all(list.map(async (r) => ((await ours(r)) ? r : null)))).filter((r): r is RecordedProcess => r !== null);
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
  /** Waits until none of `list` is left or `ms` have passed on the clock; returns those left. */
  const whileLive = async (list: RecordedProcess[], ms: number) => {
    const until = clock.now() + ms;
    let left = await live(list);
    for (let delay = POLL_FIRST_MS; left.length && clock.now() < until; delay = Math.min(delay * 2, POLL_MAX_MS)) {
      await sleep(Math.min(delay, until - clock.now()));
      left = await live(left);
    }
    return left;
  };

  const signalled = (await live([...records])).filter((r) => signal(r, opts.graceMs > 0 ? 'SIGTERM' : 'SIGKILL'));
  let left = signalled;
  if (opts.graceMs > 0 && left.length) {
    left = await whileLive(left, opts.graceMs);
    for (const r of await live(left)) signal(r, 'SIGKILL');
  }
  if (left.length) await whileLive(left, opts.waitMs);
  return signalled;
}
