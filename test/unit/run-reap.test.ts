import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startTimeOf } from '../../src/lib/proc.js';
import { groupAlive, isSameGroup, reapRecorded, type RecordedProcess } from '../../src/lib/reap.js';
import { exited } from '../cli-helpers.js';
import { eventually } from '../harness.js';
import { alive, procStat } from '../procs.js';

// Reaping what a crashed daemon left behind: an agent CLI's process group, by the leader's pid and
// start time. Real processes; no daemon.

const linux = process.platform === 'linux';

/** Spawned here, killed after each test whatever happened. */
const groups: number[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const pg of groups.splice(0))
    try {
      process.kill(-pg, 'SIGKILL');
    } catch {
      // gone
    }
});

/** Lines a process prints on stdout, as they come. */
function lines(child: ChildProcess): (match: RegExp) => Promise<string> {
  let buf = '';
  const seen: string[] = [];
  const waiters: { match: RegExp; resolve: (l: string) => void }[] = [];
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const l = buf.slice(0, i);
      buf = buf.slice(i + 1);
      seen.push(l);
      for (const w of [...waiters]) if (w.match.test(l)) waiters.splice(waiters.indexOf(w), 1) && w.resolve(l);
    }
  });
  return (match) => {
    const hit = seen.find((l) => match.test(l));
    return hit ? Promise.resolve(hit) : new Promise((resolve) => waiters.push({ match, resolve }));
  };
}

/**
 * A process group as a run's CLI leaves it: a leader (its own group, as the supervisor starts it)
 * with a child in its group, both ignoring SIGTERM or not. The child's pid is printed once it is up.
 */
async function leaderWithChild(opts: { ignoreTerm?: boolean; leaderExits?: boolean } = {}) {
  const trap = opts.ignoreTerm ? "process.on('SIGTERM',()=>{});" : '';
  const childScript = `${trap}console.log('up');setInterval(()=>{},1e6)`;
  const leader = spawn(
    process.execPath,
    [
      '-e',
      `${trap}const c=require('child_process').spawn(process.execPath,['-e',${JSON.stringify(childScript)}],{stdio:['ignore','pipe','ignore']});c.stdout.once('data',()=>{c.stdout.destroy();c.unref();console.log('child '+c.pid);${opts.leaderExits ? 'process.exit(0)' : 'setInterval(()=>{},1e6)'}})`,
    ],
    { detached: true, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  groups.push(leader.pid!);
  const rec: RecordedProcess = { pid: leader.pid!, startTime: startTimeOf(leader.pid!)! };
  const child = Number((await lines(leader)(/^child /)).split(' ')[1]);
  if (opts.leaderExits) await exited(leader);
  return { leader, child, rec };
}

/** Signals sent to process groups (passed on to the OS). */
function groupSignals(): string[] {
  const sent: string[] = [];
  const real = process.kill.bind(process);
  vi.spyOn(process, 'kill').mockImplementation((pid: number, sig?: string | number) => {
    if (pid < 0 && sig !== 0) sent.push(`${sig}`);
    return real(pid, sig);
  });
  return sent;
}

describe.runIf(linux)('reaping the process group of a run', () => {
  it('SIGTERM ends the leader and its children', async () => {
    const { leader, child, rec } = await leaderWithChild();
    const signals = groupSignals();
    expect(await reapRecorded([rec], { group: true, graceMs: 5000, waitMs: 2000 })).toEqual([rec]);
    expect(signals).toEqual(['SIGTERM']);
    await exited(leader);
    expect(leader.signalCode).toBe('SIGTERM');
    expect(alive(child)).toBe(false);
  });

  it('a group that ignores SIGTERM gets SIGKILL after the grace', async () => {
    const { leader, child, rec } = await leaderWithChild({ ignoreTerm: true });
    const signals = groupSignals();
    expect(await reapRecorded([rec], { group: true, graceMs: 200, waitMs: 2000 })).toEqual([rec]);
    expect(signals).toEqual(['SIGTERM', 'SIGKILL']);
    await exited(leader);
    expect(leader.signalCode).toBe('SIGKILL');
    expect(alive(child)).toBe(false);
  });

  it('the children of a leader that is gone are still reaped: their group is what is left of it', async () => {
    const { child, rec } = await leaderWithChild({ leaderExits: true });
    expect(alive(child)).toBe(true);
    expect(await isSameGroup(rec)).toBe(true);
    expect(await reapRecorded([rec], { group: true, graceMs: 5000, waitMs: 2000 })).toEqual([rec]);
    expect(alive(child)).toBe(false);
  });

  it('leaves alone a pid whose start time differs (it went to another process), and a leaderless group older than the record', async () => {
    const a = await leaderWithChild();
    const b = await leaderWithChild({ leaderExits: true });
    const signals = groupSignals();
    const otherProcess = { pid: a.rec.pid, startTime: String(Number(a.rec.startTime) + 1) };
    // b's group has no leader, and its child started before this (made-up) leader did: not its remnant.
    const childStart = startTimeOf(b.child)!;
    const newerLeader = { pid: b.rec.pid, startTime: String(Number(childStart) + 1) };
    expect(await isSameGroup(otherProcess)).toBe(false);
    expect(await isSameGroup(newerLeader)).toBe(false);
    expect(await reapRecorded([otherProcess, newerLeader], { group: true, graceMs: 5000, waitMs: 2000 })).toEqual([]);
    expect(signals).toEqual([]);
    expect(alive(a.leader.pid!)).toBe(true);
    expect(alive(a.child)).toBe(true);
    expect(alive(b.child)).toBe(true);
  });

  it('a record of a process that is gone is nothing to do', async () => {
    const c = spawn('true', [], { stdio: 'ignore', detached: true });
    const rec = { pid: c.pid!, startTime: startTimeOf(c.pid!) ?? '1' };
    await exited(c);
    expect(await reapRecorded([rec], { group: true, graceMs: 5000, waitMs: 2000 })).toEqual([]);
  });
});

describe.runIf(linux)('groupAlive', () => {
  it('is false for a group of zombies only, which kill(-pgid, 0) still answers for', async () => {
    // `setsid` puts the short sleep in a group of its own; the shell then becomes a long sleep that
    // never collects it, so once it ends it stays a zombie, alone in its group.
    const parent = spawn('/bin/sh', ['-c', 'setsid sleep 0.05 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = Number(await lines(parent)(/^\d+$/));
      await eventually(() => procStat(pid)?.[0] === 'Z', 5000, 5);
      expect(procStat(pid)?.[2]).toBe(String(pid)); // its own group
      expect(() => process.kill(-pid, 0)).not.toThrow();
      expect(await groupAlive(pid)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('is true while a member runs, false once none is left', async () => {
    const { leader, rec } = await leaderWithChild();
    expect(await groupAlive(rec.pid)).toBe(true);
    process.kill(-rec.pid, 'SIGKILL');
    await exited(leader);
    await eventually(async () => !(await groupAlive(rec.pid)), 5000, 5);
  });
});
