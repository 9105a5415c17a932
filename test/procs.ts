import { readdirSync, readFileSync } from 'node:fs';
import { statFields } from '../src/lib/proc.js';

// Processes as the tests see them in /proc (Linux): a worker's parent, state and CPU.

/** Fields of /proc/<pid>/stat from the 3rd on (state [0], ppid [1], utime [11]), or null when gone. */
export function procStat(pid: number): string[] | null {
  try {
    return statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** Running, or stopped; not a zombie. */
export const alive = (pid: number): boolean => {
  const f = procStat(pid);
  return !!f && f[0] !== 'Z' && f[0] !== 'X';
};

/** Live children of `ppid`; with `cmd`, only those whose command line holds it. */
export function childrenOf(ppid: number, cmd?: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const pid = Number(d);
    if (procStat(pid)?.[1] !== String(ppid) || !alive(pid)) continue;
    try {
      if (cmd && !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(cmd)) continue;
    } catch {
      continue; // gone meanwhile
    }
    out.push(pid);
  }
  return out;
}

/** Data workers started by this process (the test daemons and runners run in it). */
export const ownDataWorkers = (): number[] => childrenOf(process.pid, 'worker.js');
