import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { cutMarker, LineSplitter, utf8Boundary } from '../../src/resources/runs/lines.js';
import { supervise } from '../../src/resources/runs/supervisor.js';
import type { SuperviseOptions, Supervised } from '../../src/resources/runs/types.js';
import { FakeClock } from '../fake-clock.js';
import { eventually } from '../harness.js';
import { alive } from '../procs.js';

// The supervisor against real, short-lived child processes (node -e scripts). Its timers (stall,
// total, kill grace) run on a fake clock the tests move; everything else waits on events: a line
// read, the exit resolved.

const linux = process.platform === 'linux';
const tmp = mkdtempSync(join(tmpdir(), 'svc-supervisor-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The signals the code under test sends to process group `pgid` (passed on to the OS as well). */
function groupSignals(pgid: number): string[] {
  const sent: string[] = [];
  const real = process.kill.bind(process);
  vi.spyOn(process, 'kill').mockImplementation((pid: number, sig?: string | number) => {
    if (pid === -pgid && sig !== 0) sent.push(String(sig));
    return real(pid, sig);
  });
  return sent;
}

const started: Supervised[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  // A failed test must not leave a process group behind.
  for (const s of started.splice(0))
    if (s.pid)
      try {
        process.kill(-s.pid, 'SIGKILL');
      } catch {
        // gone
      }
});

interface Watched {
  s: Supervised;
  out: string[];
  err: string[];
  clock: FakeClock;
  /** Resolves with the first line (of stdout, or stderr) matching, already read or still to come. */
  line(match: string | RegExp, stream?: 'out' | 'err'): Promise<string>;
  /** Resolves once `n` stdout lines equal `text`. */
  count(text: string, n: number): Promise<void>;
}

function run(script: string, over: Partial<SuperviseOptions> = {}, clock = new FakeClock()): Watched {
  const out: string[] = [];
  const err: string[] = [];
  const waiters: { stream: 'out' | 'err'; test: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  const counters: { text: string; n: number; resolve: () => void }[] = [];
  const seen = (stream: 'out' | 'err', l: string) => {
    for (const c of [...counters])
      if (stream === 'out' && out.filter((x) => x === c.text).length >= c.n) {
        counters.splice(counters.indexOf(c), 1);
        c.resolve();
      }
    for (const w of [...waiters])
      if (w.stream === stream && w.test(l)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(l);
      }
  };
  const opts: SuperviseOptions = {
    command: process.execPath,
    args: ['-e', script],
    cwd: tmp,
    env: { PATH: process.env.PATH ?? '' },
    stdin: '',
    stallMs: 60_000,
    timeoutMs: 600_000,
    killGraceMs: 10_000,
    maxLineBytes: 64 * 1024,
    onStdoutLine: (l) => {
      out.push(l);
      seen('out', l);
    },
    onStderrLine: (l) => {
      err.push(l);
      seen('err', l);
    },
    ...over,
  };
  const s = supervise(opts, clock);
  started.push(s);
  return {
    s,
    out,
    err,
    clock,
    line(match, stream = 'out') {
      const test = (l: string) => (typeof match === 'string' ? l === match : match.test(l));
      const hit = (stream === 'out' ? out : err).find(test);
      return hit !== undefined ? Promise.resolve(hit) : new Promise((resolve) => waiters.push({ stream, test, resolve }));
    },
    count(text, n) {
      return out.filter((x) => x === text).length >= n ? Promise.resolve() : new Promise((resolve) => counters.push({ text, n, resolve }));
    },
  };
}

describe('LineSplitter', () => {
  const text = 'héllo wörld 😀\r\nsecond line — ünïcödé\n\nlast without newline 𝄞';
  const expected = ['héllo wörld 😀', 'second line — ünïcödé', '', 'last without newline 𝄞'];

  it('splits the same whatever the chunks: a character or a CRLF cut across two chunks stays whole', () => {
    const bytes = Buffer.from(text);
    for (let a = 0; a <= bytes.length; a++) {
      for (let b = a; b <= bytes.length; b += 3) {
        const s = new LineSplitter(1024);
        const got = [...s.push(bytes.subarray(0, a)), ...s.push(bytes.subarray(a, b)), ...s.push(bytes.subarray(b)), ...s.end()];
        expect(got, `cut at ${a} and ${b}`).toEqual(expected);
      }
    }
  });

  it('cuts a long line at a character boundary, marks it, and skips the rest of it without holding it', () => {
    const max = 10;
    const s = new LineSplitter(max);
    const got: string[] = [];
    got.push(...s.push(Buffer.from('short\nééééééé'))); // 14 bytes of é so far, no LF yet
    // A megabyte more of the same line, in chunks: nothing of it is kept.
    for (let i = 0; i < 256; i++) {
      got.push(...s.push(Buffer.alloc(4096, 'x')));
      expect(s.held).toBeLessThanOrEqual(max + 1);
    }
    got.push(...s.push(Buffer.from('tail of it\nnext\n')));
    got.push(...s.end());
    // 10 bytes would split the 6th é (bytes 10-11): the cut keeps 5.
    expect(got).toEqual(['short', 'ééééé' + cutMarker(max), 'next']);
  });

  it('keeps a line of exactly max bytes whole, with LF or CRLF, and cuts one byte more', () => {
    const s = new LineSplitter(4);
    expect(s.push(Buffer.from('abcd\nabcd\r\nabcde\nab'))).toEqual(['abcd', 'abcd', 'abcd' + cutMarker(4)]);
    expect(s.push(Buffer.from('cd\r'))).toEqual([]);
    expect(s.push(Buffer.from('\n'))).toEqual(['abcd']);
  });

  it('finds UTF-8 character boundaries', () => {
    const b = Buffer.from('a😀'); // 1 + 4 bytes
    expect([1, 2, 3, 4, 5].map((n) => utf8Boundary(b, n))).toEqual([1, 1, 1, 1, 5]);
  });
});

describe.runIf(linux)('supervise', () => {
  it('writes the prompt to stdin, reads both streams as lines, and reports a non-zero exit', async () => {
    const w = run(`let s='';process.stdin.setEncoding('utf8').on('data',d=>s+=d).on('end',()=>{for(const l of s.split('\\n'))console.log('got '+l);console.error('to stderr');process.exitCode=3})`, {
      stdin: 'one\ntwo — é',
    });
    expect(w.s.pid).toBeGreaterThan(0);
    expect(w.s.startTime).toMatch(/^\d+$/);
    // Its own process group: pgid (field 5 of /proc/<pid>/stat) is its pid.
    const stat = readFileSync(`/proc/${w.s.pid}/stat`, 'utf8');
    expect(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]).toBe(String(w.s.pid));
    const exit = await w.s.exited;
    expect(exit).toEqual({ code: 3, signal: null, reason: 'exited', error: null });
    expect(w.out).toEqual(['got one', 'got two — é']);
    expect(w.err).toEqual(['to stderr']);
    expect(w.clock.pending).toBe(0);
    // Cancelling a run that has ended signals nothing: its group id may be another process's by now.
    const signals = groupSignals(w.s.pid!);
    expect(await w.s.cancel()).toBe(exit);
    expect(signals).toEqual([]);
    expect(w.clock.pending).toBe(0);
  });

  it('reads a character split across two writes whole, and CRLF lines without the CR', async () => {
    // Two writes with a pause between them arrive as two chunks; the cut falls inside "é" and "😀".
    const w = run(
      `const b=Buffer.from('mé 😀\\r\\nok\\n');process.stdout.write(b.subarray(0,2));setTimeout(()=>{process.stdout.write(b.subarray(2,6));setTimeout(()=>process.stdout.write(b.subarray(6)),20)},20)`,
    );
    await w.s.exited;
    expect(w.out).toEqual(['mé 😀', 'ok']);
  });

  it('cuts a line longer than maxLineBytes and goes on with the next', async () => {
    const w = run(`process.stdout.write('x'.repeat(300000)+'\\nafter\\n')`, { maxLineBytes: 1000 });
    await w.s.exited;
    expect(w.out).toEqual(['x'.repeat(1000) + cutMarker(1000), 'after']);
  });

  it('ends a silent process as stalled; output in between moves the deadline', async () => {
    // SIGUSR1 makes it print; SIGTERM is announced on stdout, then it exits.
    const w = run(`process.on('SIGUSR1',()=>console.log('tick'));process.on('SIGTERM',()=>{console.log('term');process.exit(0)});console.log('ready');setInterval(()=>{},1e6)`, { stallMs: 1000 });
    const signals = groupSignals(w.s.pid!);
    await w.line('ready');
    w.clock.advance(900);
    process.kill(w.s.pid!, 'SIGUSR1');
    await w.line('tick'); // read at +900
    w.clock.advance(100); // +1000: the first deadline, but only 100 ms of silence
    expect(signals).toEqual([]);
    process.kill(w.s.pid!, 'SIGUSR1');
    await w.count('tick', 2); // read at +1000
    w.clock.advance(999);
    expect(signals).toEqual([]);
    w.clock.advance(1); // +2000: 1000 ms of silence
    expect(signals).toEqual(['SIGTERM']);
    const exit = await w.s.exited;
    expect(exit).toEqual({ code: 0, signal: null, reason: 'stalled', error: null });
    expect(w.out).toEqual(['ready', 'tick', 'tick', 'term']);
    expect(w.clock.pending).toBe(0);
  });

  it('a hold (the CLI waits on svc) is no stall; the silence counts again from its release', async () => {
    const w = run(`process.on('SIGTERM',()=>{console.log('term');process.exit(0)});console.log('ready');setInterval(()=>{},1e6)`, { stallMs: 1000 });
    const signals = groupSignals(w.s.pid!);
    await w.line('ready');
    const release = w.s.hold();
    w.clock.advance(5000);
    expect(signals).toEqual([]);
    release();
    release(); // a second call changes nothing
    w.clock.advance(999);
    expect(signals).toEqual([]);
    w.clock.advance(1001);
    expect(signals).toEqual(['SIGTERM']);
    expect((await w.s.exited).reason).toBe('stalled');
  });

  it('ends a process that runs too long as timed_out, output or not', async () => {
    const w = run(`setInterval(()=>console.log('busy'),5)`, { stallMs: 5000, timeoutMs: 2000 });
    const signals = groupSignals(w.s.pid!);
    await w.line('busy');
    w.clock.advance(1999);
    expect(signals).toEqual([]);
    w.clock.advance(1);
    expect(signals).toEqual(['SIGTERM']);
    const exit = await w.s.exited;
    expect(exit).toMatchObject({ code: null, signal: 'SIGTERM', reason: 'timed_out' });
  });

  it('cancel: SIGTERM to the group, SIGKILL after the grace when it is ignored, resolved once gone', async () => {
    const w = run(`process.on('SIGTERM',()=>console.log('ignored'));console.log('ready');setInterval(()=>{},1e6)`, { killGraceMs: 10_000 });
    const signals = groupSignals(w.s.pid!);
    await w.line('ready');
    const cancelled = w.s.cancel();
    await w.line('ignored');
    let done = false;
    void cancelled.then(() => (done = true));
    w.clock.advance(9_999);
    expect(signals).toEqual(['SIGTERM']);
    expect(alive(w.s.pid!)).toBe(true);
    expect(done).toBe(false);
    w.clock.advance(1);
    expect(signals).toEqual(['SIGTERM', 'SIGKILL']);
    const exit = await cancelled;
    expect(exit).toEqual({ code: null, signal: 'SIGKILL', reason: 'cancelled', error: null });
    expect(await w.s.exited).toBe(exit);
    expect(alive(w.s.pid!)).toBe(false);
    // Cancelling again changes nothing.
    expect(await w.s.cancel()).toBe(exit);
  });

  // A grandchild in the leader's group whose stdout is not ours (so the pipes do not tell when it
  // ends). Once it is up (its SIGTERM handler set), the leader prints its pid, then runs `then`.
  // Ignoring SIGTERM, it says so on the stderr it shares with the leader.
  const grandchild = (ignoreTerm: boolean, then: string) =>
    `const c=require('child_process').spawn(process.execPath,['-e',${JSON.stringify(
      `${ignoreTerm ? "process.on('SIGTERM',()=>require('fs').writeSync(2,'grandchild ignored TERM\\n'));" : ''}console.log('up');setInterval(()=>{},1e6)`,
    )}],{stdio:['ignore','pipe',${ignoreTerm ? "'inherit'" : "'ignore'"}]});c.stdout.once('data',()=>{c.stdout.destroy();console.log('grandchild '+c.pid);${then}});`;

  it('a leader that exits leaves no process of its group behind', async () => {
    const w = run(grandchild(false, 'process.exit(0)'));
    const pid = Number((await w.line(/^grandchild /)).split(' ')[1]);
    const exit = await w.s.exited;
    expect(exit).toEqual({ code: 0, signal: null, reason: 'exited', error: null });
    expect(alive(pid)).toBe(false);
  });

  it('a grandchild that ignores SIGTERM is killed after the grace, even with its leader gone', async () => {
    const w = run(grandchild(true, 'process.exit(0)'));
    const pid = Number((await w.line(/^grandchild /)).split(' ')[1]);
    await w.line('grandchild ignored TERM', 'err');
    expect(alive(pid)).toBe(true);
    w.clock.advance(10_000);
    expect(await w.s.exited).toEqual({ code: 0, signal: null, reason: 'exited', error: null });
    expect(alive(pid)).toBe(false);
  });

  it('cancel ends the grandchildren with the leader', async () => {
    const w = run(grandchild(false, 'setInterval(()=>{},1e6)'));
    const pid = Number((await w.line(/^grandchild /)).split(' ')[1]);
    const exit = await w.s.cancel();
    expect(exit).toMatchObject({ reason: 'cancelled', signal: 'SIGTERM' });
    expect(alive(pid)).toBe(false);
  });

  it('a process that left the group but holds the pipes does not hold the run: they are closed a grace after the group is gone', async () => {
    // The grandchild makes a session of its own (detached) and keeps the leader's stdout.
    const w = run(
      `const c=require('child_process').spawn(process.execPath,['-e','setInterval(()=>{},1e6)'],{detached:true,stdio:['ignore','inherit','ignore']});console.log('escaped '+c.pid);c.unref();setTimeout(()=>process.exit(0),10)`,
    );
    const pid = Number((await w.line(/^escaped /)).split(' ')[1]);
    try {
      let done = false;
      void w.s.exited.then(() => (done = true));
      await eventually(() => w.clock.pending === 1, 5000, 5); // the leader is gone, the closer is set
      expect(done).toBe(false);
      w.clock.advance(10_000);
      expect(await w.s.exited).toEqual({ code: 0, signal: null, reason: 'exited', error: null });
      expect(alive(pid)).toBe(true); // not ours any more: not signalled
    } finally {
      process.kill(pid, 'SIGKILL');
    }
  });

  it('a process that exits without reading a large prompt is no error (EPIPE on stdin)', async () => {
    const w = run(`process.exit(0)`, { stdin: 'x'.repeat(4 * 1024 * 1024) });
    expect(await w.s.exited).toEqual({ code: 0, signal: null, reason: 'exited', error: null });
  });

  it('spawn failures resolve as spawn_failed with the OS error, and never throw', async () => {
    const missing = run('', { command: join(tmp, 'no-such-cli'), args: [] });
    expect(missing.s.pid).toBeNull();
    expect(await missing.s.exited).toMatchObject({ reason: 'spawn_failed', code: null, error: expect.stringContaining('ENOENT') });
    expect(await missing.s.cancel()).toMatchObject({ reason: 'spawn_failed' });

    const notExecutable = join(tmp, 'not-executable');
    writeFileSync(notExecutable, '#!/bin/sh\necho hi\n');
    chmodSync(notExecutable, 0o644);
    expect(await run('', { command: notExecutable, args: [] }).s.exited).toMatchObject({ reason: 'spawn_failed', error: expect.stringContaining('EACCES') });

    const noCwd = await run('', { cwd: join(tmp, 'gone') }).s.exited;
    expect(noCwd).toMatchObject({ reason: 'spawn_failed', error: expect.stringContaining('working directory') });

    // Refused by Node before the OS is asked.
    expect(await run('', { args: ['a\u0000b'] }).s.exited).toMatchObject({ reason: 'spawn_failed' });
  });

  it('a consumer that returns a promise holds the stream: the process blocks instead of a queue growing', async () => {
    // 8 MiB of lines written synchronously, progress on stderr after each MiB.
    const script = `const fs=require('fs');const line=Buffer.from('y'.repeat(1023)+'\\n');const mib=Buffer.concat(Array(1024).fill(line));for(let i=1;i<=8;i++){fs.writeSync(1,mib);fs.writeSync(2,'wrote '+i+'\\n')}`;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let lines = 0;
    const w = run(script, {
      stallMs: 1000,
      onStdoutLine: () => {
        lines++;
        if (lines === 1) return gate;
      },
    });
    // It blocks in the kernel, writing to a socket nobody reads.
    // (After its first line: before it, a child still starting sleeps too, in a futex wait.)
    await eventually(() => lines >= 1 && /sock|pipe|unix|wait/.test(readFileSync(`/proc/${w.s.pid}/wchan`, 'utf8')) && readFileSync(`/proc/${w.s.pid}/stat`, 'utf8').includes(') S '), 5000, 5);
    expect(lines).toBe(1);
    expect(w.err.length).toBeLessThanOrEqual(1); // at most one MiB out of eight got past the kernel's buffers and ours
    w.clock.advance(5000); // silence while we hold the stream is not the CLI's: no stall
    release();
    const exit = await w.s.exited;
    expect(exit).toEqual({ code: 0, signal: null, reason: 'exited', error: null });
    expect(lines).toBe(8 * 1024);
    expect(w.err.at(-1)).toBe('wrote 8');
  });

  it.runIf(linux)('runs the process at runner.nice: every thread, those it made before and after, and its children; 0 leaves it at ours', async () => {
    // A worker thread at once, a child once it is online, a second thread later.
    const script = `
      const { Worker } = require('node:worker_threads');
      const { execFileSync } = require('node:child_process');
      const keep = () => new Worker('setInterval(() => {}, 1000)', { eval: true });
      keep().once('online', () => {
        console.log('child ' + execFileSync('sh', ['-c', 'cut -d" " -f19 /proc/self/stat']).toString().trim());
        setTimeout(() => keep().once('online', () => console.log('more')), 50);
      });`;
    const nices = (pid: number) =>
      readdirSync(`/proc/${pid}/task`).map((tid) => {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
      });
    const want = Math.max(7, getPriority());
    const w = run(script, { nice: 7 });
    expect(await w.line(/^child /)).toBe(`child ${want}`);
    await w.line('more');
    expect(nices(w.s.pid!).length).toBeGreaterThan(2);
    expect(new Set(nices(w.s.pid!))).toEqual(new Set([want]));
    // Its session's scheduling group too, where the kernel groups by session (autogroup): there nice alone weighs nothing against the daemon.
    if (existsSync(`/proc/${w.s.pid}/autogroup`)) expect(readFileSync(`/proc/${w.s.pid}/autogroup`, 'utf8')).toMatch(new RegExp(` nice ${want}\\n?$`));
    w.s.cancel();
    await w.s.exited;

    const plain = run(script, { nice: 0 });
    expect(await plain.line(/^child /)).toBe(`child ${getPriority()}`);
    await plain.line('more');
    expect(new Set(nices(plain.s.pid!))).toEqual(new Set([getPriority()]));
    plain.s.cancel();
    await plain.s.exited;
  });
});
