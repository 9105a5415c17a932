import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolve } from '../src/resources/data/service.js';
import { DATA_RUNNER } from '../src/resources/data/sqlite-backend.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { ownDataWorkers as workerPids } from './procs.js';

// Memory a caller's statement may take is capped by the kernel (RLIMIT_DATA on each worker), and
// the number of workers by data.maxWorkers: the least recently used idle one makes room, and
// requests for a database without a worker wait for a slot instead of failing.

const linux = process.platform === 'linux';
const T = { tables: { t: { columns: { a: { type: 'integer' } } } } };

describe.runIf(linux)('a statement past the worker memory limit', () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon({ config: { data: { workerMemoryMb: 448, statementTimeoutMs: 30_000 } } });
    expect((await d.api('POST', '/api/v1/data', { body: { name: 'm', schema: T } })).status).toBe(201);
  });
  afterAll(() => d.close());
  const query = (sql: string) => d.api('POST', '/api/v1/data/m/query', { body: { mode: 'read', sql } });
  const workerLines = () => d.logs.filter((l) => l.includes('data worker'));

  it('is answered 413 data_limit when SQLite cannot allocate (300 MB in one string)', async () => {
    // 3,000 × 100,000 hex characters: answered 200 with 300,002,999 before the limit was in force.
    const r = await query('SELECT length(group_concat(hex(randomblob(50000)))) AS n FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 3000) SELECT x FROM c)');
    expect(r.status, JSON.stringify(r.body)).toBe(413);
    expect(r.body.code).toBe('data_limit');
    const one = await query('SELECT length(randomblob(400000000)) AS n');
    expect(one.status, JSON.stringify(one.body)).toBe(413);
    expect((await query('SELECT 1 AS n')).body.data.rows).toEqual([{ n: 1 }]);
  });

  it('is answered 413 when the worker itself runs out (V8 aborts), with one log line, and the next request is served', async () => {
    const before = workerLines().length;
    // SQLite's 256 MB blob fits beside node's own ~100 MB; the worker's copy of it for the answer
    // (256 MB more) cannot, whatever node's own share on this machine.
    const r = await query('SELECT randomblob(256000000) AS b');
    expect(r.status, JSON.stringify(r.body)).toBe(413);
    expect(r.body.code).toBe('data_limit');
    expect(r.body.error).toContain('data.workerMemoryMb');
    const lines = workerLines().slice(before);
    expect(lines, lines.join('\n')).toHaveLength(1);
    expect(lines[0]).toContain('ran out of memory');
    expect((await query('SELECT 2 AS n')).body.data.rows).toEqual([{ n: 2 }]);
  });
});

describe.runIf(linux)('data.maxWorkers', () => {
  let d: TestDaemon;
  const names = Array.from({ length: 8 }, (_, i) => `db${i}`);
  beforeAll(async () => {
    d = await startTestDaemon({ config: { data: { maxWorkers: 3 } } });
    for (const name of names) expect((await d.api('POST', '/api/v1/data', { body: { name, schema: T } })).status).toBe(201);
  });
  afterAll(() => d.close());
  const read = (name: string, n: number) => d.api('POST', `/api/v1/data/${name}/query`, { body: { mode: 'read', sql: `SELECT ${n} AS n` } });

  it('never has more workers than the cap, however many databases are queried in turn', async () => {
    let most = 0;
    for (let round = 0; round < 2; round++) {
      for (const [i, name] of names.entries()) {
        const r = await read(name, i);
        expect(r.status).toBe(200);
        expect(r.body.data.rows).toEqual([{ n: i }]);
        most = Math.max(most, workerPids().length);
      }
    }
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThanOrEqual(2);
  });

  it('requests for more databases at once than the cap wait for a slot and are all answered', async () => {
    const all = await Promise.all(names.flatMap((name, i) => [read(name, i), read(name, i + 100)]));
    expect(all.map((r) => r.status)).toEqual(all.map(() => 200));
    expect(all.map((r) => r.body.data.rows[0].n)).toEqual(names.flatMap((_, i) => [i, i + 100]));
    expect(workerPids().length).toBeLessThanOrEqual(3);
  });

  it('closes the least recently used idle worker to make room', async () => {
    const runner = d.daemon.app.services.get(DATA_RUNNER);
    const id = async (name: string) => (await resolve(d.daemon.app, name)).id;
    // Two lanes and the spare fill the cap: a, then b, then a again; c takes b's place, not a's.
    await read('db0', 0);
    await read('db1', 1);
    await read('db0', 0);
    const pidA = runner.pidOf(await id('db0'));
    expect(pidA).toBeDefined();
    await read('db2', 2);
    expect(runner.pidOf(await id('db0'))).toBe(pidA);
    expect(runner.pidOf(await id('db1'))).toBeUndefined();
  });
});
