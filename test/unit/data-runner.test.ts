import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/kernel/log.js';
import { DataRunner } from '../../src/resources/data/sql-runner.js';
import { profilerArgs, WORKER_ISOLATES, workerCodeReserveKb } from '../../src/resources/data/worker-process.js';
import { eventually } from '../harness.js';
import { ownDataWorkers as liveWorkers } from '../procs.js';
import { tempDir } from '../temp.js';

// The runner sends the requests of one event-loop turn to a worker in one IPC message; the worker
// answers each before starting the next, so when one of them runs away only that one is blamed.

const RUNAWAY = 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r';
const ALL = { read: '*' as const, write: '*' as const };
const read = (sql: string, maxRows = 10) => ({ type: 'query' as const, req: { sql, params: [], mode: 'read' as const, maxRows, grants: ALL } });
const T = { tables: { t: { columns: { n: { type: 'integer' as const } } } } };
/** About 400 KB of answer: more than a socket buffer takes in one write. */
const LARGE = "SELECT n, printf('%.4000c', 'x') AS pad FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 100) SELECT n FROM r)";
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code?: string }) => e.code,
  );

const start = (timeoutMs: number, lines: string[] = []) => {
  const dir = tempDir('svc-runner-');
  runner = new DataRunner({ log: createLogger((l) => lines.push(l)), dir, statementTimeoutMs: () => timeoutMs });
  return { runner, dir };
};
const create = (key: string) => runner!.call(key, { type: 'open', file: runner!.fileOf(key), create: T }, { slow: true });

let runner: DataRunner | undefined;
afterEach(async () => {
  await runner?.close();
  runner = undefined;
});

describe('DataRunner', () => {
  it('in one message with a runaway read, the reads before it are answered, those after it are re-sent, and only it is 503', async () => {
    const lines: string[] = [];
    runner = new DataRunner({ log: createLogger((l) => lines.push(l)), dir: tempDir('svc-runner-'), statementTimeoutMs: () => 1500 });
    const key = '0190b5a0-0000-7000-8000-000000000001';
    const created = runner.call(key, { type: 'open', file: runner.fileOf(key), create: { tables: { t: { columns: { n: { type: 'integer' } } } } } }, { slow: true });
    // Queued while the open is in flight: all five leave together, behind it, in one message.
    const settled: number[] = [];
    const calls = [read('SELECT 1 AS n'), read('SELECT 2 AS n'), read(RUNAWAY), read('SELECT 4 AS n'), read('SELECT 5 AS n')].map((m, i) =>
      runner!
        .call<{ json: Uint8Array }>(key, m)
        .then(
          // The worker answers the JSON bytes the daemon hands on unparsed.
          (v) => ({ ok: true as const, n: (JSON.parse(Buffer.from(v.json).toString('utf8')) as { rows: { n: number }[] }).rows[0]!.n }),
          (e: { code?: string }) => ({ ok: false as const, code: e.code }),
        )
        .finally(() => settled.push(i)),
    );
    await created;
    const r = await Promise.all(calls);
    expect(r.map((x) => (x.ok ? x.n : x.code))).toEqual([1, 2, 'data_unavailable', 4, 5]);
    // The two before it were answered before the kill, not blamed or held for it; the runaway was
    // stopped once (run again, it would have been killed twice).
    expect(settled.slice(0, 3)).toEqual([0, 1, 2]);
    expect(runner.killed).toHaveLength(1);
    expect(lines.filter((l) => l.includes('stopped at the time limit'))).toHaveLength(1);
  });

  it('closing while a runaway runs answers it and every read queued behind it', async () => {
    runner = new DataRunner({ log: createLogger(() => undefined), dir: tempDir('svc-runner-'), statementTimeoutMs: () => 60_000 });
    const key = '0190b5a0-0000-7000-8000-000000000002';
    await runner.call(key, { type: 'open', file: runner.fileOf(key), create: { tables: { t: { columns: { n: { type: 'integer' } } } } } }, { slow: true });
    const codes = [read(RUNAWAY), read('SELECT 2 AS n'), read('SELECT 3 AS n')].map((m) =>
      runner!.call(key, m).then(
        () => 'ok',
        (e: { code?: string }) => e.code,
      ),
    );
    const r = runner;
    await eventually(() => r.inflight(key) === 3);
    await runner.close(); // kills the busy worker after its grace period
    runner = undefined;
    expect(await Promise.all(codes)).toEqual(['data_unavailable', 'data_unavailable', 'data_unavailable']);
  });

  it('an answer larger than the socket buffer is out before the runaway behind it starts, so it is not blamed', async () => {
    const { runner: r } = start(1500);
    const key = '0190b5a0-0000-7000-8000-000000000003';
    const created = create(key);
    const codes = [read(LARGE, 200), read(RUNAWAY), read('SELECT 3 AS n')].map((m) => codeOf(r.call(key, m)));
    await created;
    expect(await Promise.all(codes)).toEqual(['ok', 'data_unavailable', 'ok']);
    expect(r.killed).toHaveLength(1);
  });

  it('a request arriving while a deleted database closes is refused, not left waiting', async () => {
    const { runner: r } = start(5000);
    const key = '0190b5a0-0000-7000-8000-000000000004';
    await create(key);
    await r.call(key, read('SELECT 1'));
    const retired = r.retire(key);
    expect(await codeOf(r.call(key, read('SELECT 2')))).toBe('data_not_found');
    await retired;
  });

  it('a statement stopped at its limit during shutdown starts no new worker', async () => {
    const { runner: r } = start(300);
    const key = '0190b5a0-0000-7000-8000-000000000005';
    await create(key);
    const codes = [read(RUNAWAY), read('SELECT 2')].map((m) => codeOf(r.call(key, m)));
    await eventually(() => r.inflight(key) === 2);
    await r.close(); // the limit (300 ms) passes inside the grace period
    runner = undefined;
    expect(await Promise.all(codes)).toEqual(['data_unavailable', 'data_unavailable']);
    expect(r.killed).toHaveLength(1);
    // close() resolved once every worker had exited; none is started after it (turns of the loop
    // give a late spawn its chance, and /proc would show it at once).
    for (let i = 0; i < 10; i++) await new Promise((res) => setImmediate(res));
    expect(liveWorkers()).toEqual([]);
  });

  it('a worker that finishes its last request during shutdown checkpoints and closes its file', async () => {
    const { runner: r, dir } = start(60_000);
    const key = '0190b5a0-0000-7000-8000-000000000006';
    await create(key);
    await r.call(key, { type: 'batch', ops: [{ op: 'insert', table: 't', rows: Array.from({ length: 200 }, (_, n) => ({ n })) }] });
    expect(statSync(join(dir, `${key}.sqlite-wal`)).size).toBeGreaterThan(0);
    // Busy when the daemon shuts down, done well inside the grace period.
    const busy = codeOf(r.call(key, read('WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 300000) SELECT count(*) AS n FROM r')));
    await eventually(() => r.inflight(key) === 1);
    await r.close();
    runner = undefined;
    expect(await busy).toBe('ok');
    expect(r.killed).toEqual([]);
    // Killed at the deadline it would have left its WAL as it was.
    expect(statSync(join(dir, `${key}.sqlite-wal`), { throwIfNoEntry: false })?.size ?? 0).toBe(0);
  });
});

describe('DataRunner worker slots and exits', () => {
  const write = { type: 'query' as const, req: { sql: 'INSERT INTO t (n) VALUES (1)', params: [], mode: 'write' as const, maxRows: 10, grants: ALL } };
  const keyN = (i: number) => `0190b5a0-0000-7000-8000-00000000010${i}`;

  it("a request arriving between a worker's exit and its close gets a new worker, with the time limit in force", async () => {
    const { runner: r } = start(800);
    const key = keyN(0);
    await create(key);
    // The worker dies by itself (out of memory, a crash), and a request comes after its 'exit'
    // and before its 'close' (the runner's own view of the process, as an HTTP request can).
    const proc = (r as unknown as { lanes: Map<string, { worker: { proc: import('node:child_process').ChildProcess } }> }).lanes.get(key)!.worker.proc;
    const answered = new Promise<string>((res) => proc.once('exit', () => res(codeOf(r.call(key, read(RUNAWAY))))));
    process.kill(proc.pid!, 'SIGKILL');
    // Stopped at its limit (800 ms) by a worker the lane owns, not left running for ever.
    expect(await answered).toBe('data_unavailable');
    expect(r.killed).toHaveLength(1);
    expect(await codeOf(r.call(key, read('SELECT 1 AS n')))).toBe('ok');
    // The lane's worker and the spare; none left over without a lane. The killed one may take a
    // moment to be gone on a busy machine (it was answered for at the kill, not at its exit).
    await eventually(() => liveWorkers().length <= 2, 5_000).catch(() => undefined);
    expect(liveWorkers().length).toBeLessThanOrEqual(2);
  });

  it('databases written without pause hand their slots on after a turn: one waiting for a slot is served', async () => {
    const dir = tempDir('svc-runner-');
    runner = new DataRunner({ log: createLogger(() => undefined), dir, statementTimeoutMs: () => 5000, maxWorkers: () => 2 });
    const r = runner;
    const [busy1, busy2, other] = [keyN(1), keyN(2), keyN(3)];
    for (const k of [busy1, busy2, other]) await r.call(k, { type: 'open', file: r.fileOf(k), create: T }, { slow: true });
    let stop = false;
    let served = 0;
    // Two writers on each of two databases, each sending its next write as soon as the last is
    // answered: their queues are never empty, so neither is ever idle, and they hold both slots.
    const writers = [busy1, busy1, busy2, busy2].map(async (k) => {
      while (!stop) {
        await r.call(k, write);
        served++;
      }
    });
    await eventually(() => served > 40, 10_000);
    const answer = await Promise.race([codeOf(r.call(other, read('SELECT 1 AS n'))), new Promise((res) => setTimeout(() => res('not answered in 8 s'), 8000))]);
    stop = true;
    await Promise.all(writers);
    expect(answer).toBe('ok');
    expect(liveWorkers().length).toBeLessThanOrEqual(2);
  }, 30_000);

  it('a worker that cannot start is not started again at once, again and again', async () => {
    const lines: string[] = [];
    // A worker that dies at once, saying so (as one does whose memory limit is below node's own).
    const dir = tempDir('svc-runner-');
    const entry = join(dir, 'dies.cjs');
    writeFileSync(entry, "process.stderr.write('cannot start\\n'); process.exit(1);\n");
    runner = new DataRunner({ log: createLogger((l) => lines.push(l)), dir, statementTimeoutMs: () => 1000, workerEntry: entry });
    await eventually(() => lines.length >= 2, 10_000);
    // Started again 0.5 s after the first death, then 1 s, 2 s, 4 s…: a few in 2 s, not one per exit.
    const at = lines.length;
    await new Promise((res) => setTimeout(res, 2000));
    expect(lines.length - at).toBeLessThanOrEqual(3);
    expect(lines.every((l) => l.includes('cannot start'))).toBe(true);
  });
});

describe('profilerArgs', () => {
  it('passes the profiler flags on, with a value given as its own word', () => {
    expect(profilerArgs(['--cpu-prof', '--cpu-prof-dir', '/x', '--max-old-space-size=9', '--cpu-prof-name=a'])).toEqual(['--cpu-prof', '--cpu-prof-dir', '/x', '--cpu-prof-name=a']);
    expect(profilerArgs(['--cpu-prof-dir=/y'])).toEqual(['--cpu-prof-dir=/y']);
    expect(profilerArgs(['--inspect'])).toEqual([]);
  });
});

describe('workerCodeReserveKb', () => {
  // /proc/self/maps of the daemon on Node 24 (code ranges mapped rwx up front), recorded: alone,
  // and once its webhook delivery thread has started (a second isolate, a second range).
  const lib = '7f2a25400000-7f2a25428000 r--p 00000000 08:01 1234 /usr/lib/x86_64-linux-gnu/libc.so.6';
  const heap = '0aa00000-0ab00000 rw-p 00000000 00:00 0';
  const alone = [lib, heap, '2c0a00000000-2c0a1fd80000 rwxp 00000000 00:00 0', '7ffd0f000000-7ffd0f03b000 rwxp 00000000 00:00 0'].join('\n');
  const withThread = [alone, '3d0b00000000-3d0b1fd80000 rwxp 00000000 00:00 0', '7ffd0f100000-7ffd0f13b000 rwxp 00000000 00:00 0'].join('\n');

  it('reserves one code range per isolate of the worker, whatever threads the daemon has at the time', () => {
    const range = 0x1fd80000 / 1024;
    expect(workerCodeReserveKb(alone)).toBe(range * WORKER_ISOLATES);
    expect(workerCodeReserveKb(withThread)).toBe(workerCodeReserveKb(alone));
  });

  it('reserves nothing where nothing is mapped executable and writable, or /proc is missing', () => {
    expect(workerCodeReserveKb([lib, heap].join('\n'))).toBe(0);
    expect(workerCodeReserveKb('')).toBe(0);
  });
});

describe('DataRunner spareAfterMs', () => {
  it('starts no worker until then, then its spare; a database asked for before then gets a worker of its own', async () => {
    runner = new DataRunner({ log: createLogger(() => undefined), dir: tempDir('svc-runner-'), statementTimeoutMs: () => 5000, spareAfterMs: 400 });
    const live = () => (runner as unknown as { live: Set<unknown> }).live.size;
    expect(live()).toBe(0);
    await eventually(() => live() === 1);
    await runner.close();
    runner = new DataRunner({ log: createLogger(() => undefined), dir: tempDir('svc-runner-'), statementTimeoutMs: () => 5000, spareAfterMs: 60_000 });
    await create('0190b5a0-0000-7000-8000-000000000009');
    expect(live()).toBeGreaterThanOrEqual(1);
  });
});
