import { spawn } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/kernel/log.js';
import { parseStartTime, startTimeOf } from '../src/lib/proc.js';
import { reapOrphanWorkers } from '../src/resources/data/orphans.js';
import { readLocalKey } from '../src/state-dir.js';
import { exited, serve } from './cli-helpers.js';
import { eventually, makeProject } from './harness.js';
import { alive, childrenOf, procStat } from './procs.js';
import { tempDir } from './temp.js';

// A data worker inside a long statement when its daemon is killed with -9: it must die within a
// second by itself, and one that cannot (stopped) is killed by the next daemon, by pid and start
// time, before it can hold the database's write lock against it.

const linux = process.platform === 'linux';
const RUNAWAY = 'UPDATE t SET a = a WHERE (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c) > 0';

async function post(url: string, key: string, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json().catch(() => null) };
}

const cpuTicks = (pid: number) => Number(procStat(pid)?.[11] ?? 0);

const env = (root: string) => ({ SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: `${root}/.user-config` });

/** A daemon of the real binary, with database `o` whose one write runs away on demand. */
async function start(root: string) {
  const d = await serve(root, ['--port', '0'], env(root));
  return { ...d, key: readLocalKey(root)! };
}

describe.runIf(linux)('data workers of a daemon killed with -9', () => {
  const started: { child: import('node:child_process').ChildProcess }[] = [];
  afterAll(async () => {
    for (const s of started)
      if (s.child.exitCode === null && s.child.signalCode === null) {
        s.child.kill('SIGKILL');
        await exited(s.child);
      }
  });

  async function runawayWrite(root: string) {
    const d = await start(root);
    started.push(d);
    expect((await post(d.url, d.key, '/api/v1/data', { name: 'o', schema: { tables: { t: { columns: { a: { type: 'integer' } } } } } })).status).toBe(201);
    expect((await post(d.url, d.key, '/api/v1/data/o/transactions', { operations: [{ op: 'insert', table: 't', rows: [{ a: 1 }] }] })).status).toBe(200);
    const pending = post(d.url, d.key, '/api/v1/data/o/query', { mode: 'write', sql: RUNAWAY }).catch(() => null);
    // The worker serving `o` is the child that burns CPU (the other one is the spare).
    let busy = 0;
    await eventually(() => {
      busy = childrenOf(d.child.pid!).find((pid) => cpuTicks(pid) >= 30) ?? 0;
      return busy > 0;
    }, 20_000);
    return { d, busy, workers: childrenOf(d.child.pid!), pending };
  }

  it('each dies within a second of its daemon, and the restarted daemon writes to the database', async () => {
    const root = makeProject({ data: { statementTimeoutMs: 600_000 } });
    const { d, workers, pending } = await runawayWrite(root);
    expect(workers.length).toBeGreaterThanOrEqual(2);
    const killedAt = performance.now();
    d.child.kill('SIGKILL');
    await exited(d.child);
    await pending;
    await eventually(() => workers.every((pid) => !alive(pid)), 3000, 10);
    const took = performance.now() - killedAt;
    console.log(`workers gone ${Math.round(took)} ms after the daemon was killed`);
    expect(took, `workers gone ${Math.round(took)} ms after the daemon`).toBeLessThan(1000);

    const again = await start(root);
    started.push(again);
    const w = await post(again.url, again.key, '/api/v1/data/o/transactions', { operations: [{ op: 'insert', table: 't', rows: [{ a: 2 }] }] });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    again.child.kill('SIGTERM');
    await exited(again.child);
  }, 60_000);

  it('one that is stopped is killed by the next daemon before it opens the database', async () => {
    const root = makeProject({ data: { statementTimeoutMs: 600_000 } });
    const { d, busy, workers, pending } = await runawayWrite(root);
    for (const pid of workers) process.kill(pid, 'SIGSTOP');
    d.child.kill('SIGKILL');
    await exited(d.child);
    await pending;
    // Stopped, its watchdog cannot run: it still holds the write lock of `o` (the log line below
    // says the next daemon killed it).
    expect(alive(busy)).toBe(true);

    const again = await start(root);
    started.push(again);
    expect(again.output()).toContain('killed data workers left by a daemon that is gone');
    for (const pid of workers) expect(alive(pid), `worker ${pid}`).toBe(false);
    const w = await post(again.url, again.key, '/api/v1/data/o/transactions', { operations: [{ op: 'insert', table: 't', rows: [{ a: 2 }] }] });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    again.child.kill('SIGTERM');
    await exited(again.child);
    // A clean stop leaves no record behind.
    expect(readdirSync(join(root, '.svc', 'workers'))).toEqual([]);
  }, 60_000);
});

describe.runIf(linux)('reaping by pid and start time', () => {
  const log = createLogger(() => undefined);
  const sleeper = () => {
    const c = spawn('sleep', ['30'], { stdio: 'ignore' });
    return c;
  };
  /** A pid no process has now: a child that has exited and been waited for. */
  const deadPid = async () => {
    const c = spawn('true', [], { stdio: 'ignore' });
    await exited(c);
    return c.pid!;
  };

  it('reads the start time after a command name holding spaces and parentheses', () => {
    const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
    expect(parseStartTime(`123 (a) b (c) ${fields.join(' ')}`)).toBe('22');
    expect(startTimeOf(process.pid)).toMatch(/^\d+$/);
  });

  it('kills a recorded worker of a dead daemon, and only when its start time matches', async () => {
    const dir = tempDir('svc-workers-');
    const right = sleeper();
    const wrong = sleeper();
    const ownedByLive = sleeper();
    try {
      await eventually(() => startTimeOf(right.pid!) !== null && startTimeOf(wrong.pid!) !== null && startTimeOf(ownedByLive.pid!) !== null);
      const dead = { pid: await deadPid(), start: '1' };
      const me = { pid: process.pid, start: startTimeOf(process.pid)! };
      writeFileSync(join(dir, String(right.pid)), JSON.stringify({ daemon: dead, start: startTimeOf(right.pid!) }));
      // Same pid, another start time: the pid went to another process since. Left alone.
      writeFileSync(join(dir, String(wrong.pid)), JSON.stringify({ daemon: dead, start: String(Number(startTimeOf(wrong.pid!)) + 1) }));
      // Its daemon still runs: its worker is not an orphan.
      writeFileSync(join(dir, String(ownedByLive.pid)), JSON.stringify({ daemon: me, start: startTimeOf(ownedByLive.pid!) }));
      writeFileSync(join(dir, 'garbage'), 'x');
      const killed = await reapOrphanWorkers(dir, log);
      expect(killed).toEqual([right.pid]);
      await exited(right);
      expect(right.signalCode).toBe('SIGKILL');
      expect(alive(wrong.pid!)).toBe(true);
      expect(alive(ownedByLive.pid!)).toBe(true);
      // Records of dead daemons are forgotten either way; the live daemon's stays.
      expect(readdirSync(dir).sort()).toEqual(['garbage', String(ownedByLive.pid)].sort());
    } finally {
      for (const c of [right, wrong, ownedByLive]) c.kill('SIGKILL');
    }
  });
});
