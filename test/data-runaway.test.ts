import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolve } from '../src/resources/data/service.js';
import { DATA_RUNNER } from '../src/resources/data/sqlite-backend.js';
import { collect } from './sse-collector.js';
import { eventually, startTestDaemon, type TestDaemon } from './harness.js';

// A runaway statement is stopped at data.statementTimeoutMs by killing the child process that runs
// it; while it runs, the daemon keeps answering everything else, and afterwards its CPU is free.

const RUNAWAY = 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('runaway statements', () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon({ config: { data: { statementTimeoutMs: 2500 } }, sse: { heartbeatMs: 100 } });
    for (const name of ['slow', 'fast']) {
      const r = await d.api('POST', '/api/v1/data', { body: { name, schema: { tables: { t: { columns: { n: { type: 'integer' } } } } } } });
      expect(r.status).toBe(201);
    }
    await d.api('POST', '/api/v1/data/fast/transactions', { body: { operations: [{ op: 'insert', table: 't', values: { n: 1 } }] } });
  });
  afterAll(async () => {
    await d.close();
  });

  it('is stopped with 503 while task reads, SSE pings and other databases keep answering', async () => {
    await d.api('POST', '/api/v1/data/slow/query', { body: { sql: 'SELECT 1' } }); // the worker is up
    const runner = d.daemon.app.services.get(DATA_RUNNER);
    const slowId = (await resolve(d.daemon.app, 'slow')).id;
    const pid = runner.pidOf(slowId)!;
    expect(pid).toBeGreaterThan(0);

    const sse = await collect(d.url, { key: d.key });
    let done = false;
    const runaway = d.api('POST', '/api/v1/data/slow/query', { body: { sql: RUNAWAY } }).then((r) => {
      done = true;
      return r;
    });
    const latencies: number[] = [];
    let answeredWhileRunning = 0;
    const pingsBefore = sse.comments.length;
    while (!done) {
      const t0 = performance.now();
      const [tasks, other] = await Promise.all([d.api('GET', '/api/v1/tasks'), d.api('POST', '/api/v1/data/fast/query', { body: { sql: 'SELECT n FROM t' } })]);
      latencies.push(performance.now() - t0);
      expect(tasks.status).toBe(200);
      expect(other.status).toBe(200);
      expect(other.body.data.rows).toEqual([{ n: 1 }]);
      if (!done) answeredWhileRunning++;
      await new Promise((r) => setTimeout(r, 10));
    }
    const pingsDuring = sse.comments.length - pingsBefore;
    sse.close();
    const r = await runaway;
    expect(r.status).toBe(503);
    expect(r.body.code).toBe('data_unavailable');
    expect(r.body.error).toMatch(/statementTimeoutMs/);
    // The event loop was never held: probes and SSE pings were answered during the statement (a
    // statement run on the daemon's own thread would have let none through until it ended).
    expect(answeredWhileRunning).toBeGreaterThanOrEqual(3);
    expect(pingsDuring).toBeGreaterThanOrEqual(3);
    latencies.sort((a, b) => a - b);
    console.log(
      `probes during the runaway: ${latencies.length}, p50 ${latencies[Math.floor(latencies.length / 2)]!.toFixed(1)} ms, p99 ${latencies[Math.floor(latencies.length * 0.99)]!.toFixed(1)} ms`,
    );

    // Its process was killed (its CPU released) and a fresh one serves the database.
    expect(runner.killed).toContain(pid);
    await eventually(() => !alive(pid), 5000);
    const again = await d.api('POST', '/api/v1/data/slow/query', { body: { sql: 'SELECT count(*) AS n FROM t' } });
    expect(again.status).toBe(200);
    expect(runner.pidOf(slowId)).not.toBe(pid);
  });

  it('a runaway write is stopped, keeps nothing and releases its lock', async () => {
    const r = await d.api('POST', '/api/v1/data/slow/query', {
      body: { sql: 'INSERT INTO t (n) SELECT n FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r)', mode: 'write' },
    });
    expect(r.status).toBe(503);
    const count = await d.api('POST', '/api/v1/data/slow/query', { body: { sql: 'SELECT count(*) AS n FROM t' } });
    expect(count.body.data.rows).toEqual([{ n: 0 }]);
    const w = await d.api('POST', '/api/v1/data/slow/transactions', { body: { operations: [{ op: 'insert', table: 't', values: { n: 7 } }] } });
    expect(w.status).toBe(200);
  });

  it('requests queued behind a runaway are served by the replacement', async () => {
    const runaway = d.api('POST', '/api/v1/data/slow/query', { body: { sql: RUNAWAY } });
    // Queued once the runaway is on its worker, so it is behind it.
    const runner = d.daemon.app.services.get(DATA_RUNNER);
    const id = (await resolve(d.daemon.app, 'slow')).id;
    await eventually(() => runner.inflight(id) === 1);
    const queued = d.api('POST', '/api/v1/data/slow/query', { body: { sql: 'SELECT n FROM t' } });
    expect((await runaway).status).toBe(503);
    const q = await queued;
    expect(q.status).toBe(200);
    expect(q.body.data.rows).toEqual([{ n: 7 }]);
  });
});
