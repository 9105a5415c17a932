import { readdirSync, readFile as readFileCb, readFileSync, writeFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { promisify } from 'node:util';

// The callback form: fs/promises keeps a FileHandle object for each read until it is collected.
const readFile = promisify(readFileCb);

// A pid alone does not name a process: once it exits, the kernel hands the number to the next one.
// A pid with its start time (field 22 of /proc/<pid>/stat, in clock ticks since boot) does, for as
// long as the machine runs. Linux only: elsewhere there is no /proc and these answer null.

/**
 * The fields of a /proc/<pid>/stat line from the 3rd on (state [0], ppid [1], utime [11], start
 * time [19]): they follow the command name, which is in parentheses and may hold anything.
 */
export function statFields(stat: string): string[] | null {
  const close = stat.lastIndexOf(')');
  return close < 0 ? null : stat.slice(close + 2).split(' ');
}

/** The start time of `stat`'s process (field 22). */
export function parseStartTime(stat: string): string | null {
  const start = statFields(stat)?.[19];
  return start && /^\d+$/.test(start) ? start : null;
}

/** The start time of a live process, or null when there is none by that pid (or no /proc). */
export function startTimeOf(pid: number): string | null {
  try {
    return parseStartTime(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** Whether `pid` is still the process that started at `start` (a zombie counts as gone). */
export async function isSameProcess(pid: number, start: string): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const state = statFields(stat)?.[0];
    return state !== 'Z' && state !== 'X' && parseStartTime(stat) === start;
  } catch {
    return false;
  }
}

/**
 * Whether a process runs as `pid` (one of another user counts). A zombie does not: it has exited
 * and only waits for its parent to collect it, which a detached daemon's parent (init, or a
 * container's first process) may do seconds later.
 */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const state = statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc (macOS): the signal's answer stands
  }
}

/**
 * Gives a process that has just started a lower priority (a higher nice value): its main thread
 * first, then each thread it has already made. On Linux nice is per thread, and a thread takes its
 * creator's when it is made, so what the process makes after this (threads, children) has it too.
 * Where the kernel groups processes by session for scheduling (autogroup, on by default on most
 * desktop distributions), nice only weighs within a session: a process that leads a session of
 * its own (spawned detached) gets its session's group the same value, else it would take as much
 * CPU as the daemon's whole session whatever its nice.
 * Never higher than this process's own (a daemon started with nice 15 gives its agents 15).
 * Best effort: false when the main thread's could not be set (not permitted, gone).
 */
export function lowerPriority(pid: number, nice: number): boolean {
  nice = Math.max(nice, getPriority());
  try {
    setPriority(pid, nice);
  } catch {
    return false;
  }
  try {
    // Only a session leader's group is its own to change (a child in the daemon's session shares the daemon's).
    if (statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[3] === String(pid)) writeFileSync(`/proc/${pid}/autogroup`, String(nice));
  } catch {
    // no autogroup (kernel built without it, or not Linux): nice alone decides
  }
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return true; // no /proc: the main thread's is set
  }
  for (const tid of tids) {
    if (tid === String(pid)) continue;
    try {
      setPriority(Number(tid), nice);
    } catch {
      // that thread has ended meanwhile
    }
  }
  return true;
}
