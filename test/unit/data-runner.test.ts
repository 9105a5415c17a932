import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/kernel/log.js';
import { DataRunner } from '../../src/resources/data/sql-runner.js';

// The runner sends the requests of one event-loop turn to a worker in one IPC message; the worker
// answers each before starting the next, so when one of them runs away only that one is blamed.

const RUNAWAY = 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r';
const ALL = { read: '*' as const, write: '*' as const };
const read = (sql: string) => ({ type: 'query' as const, req: { sql, params: [], mode: 'read' as const, maxRows: 10, grants: ALL } });

let runner: DataRunner | undefined;
afterEach(async () => {
  await runner?.close();
  runner = undefined;
});

describe('DataRunner', () => {
  it('in one message with a runaway read, the reads before it are answered, those after it are re-sent, and only it is 503', async () => {
    const lines: string[] = [];
    runner = new DataRunner({ log: createLogger((l) => lines.push(l)), dir: mkdtempSync(join(tmpdir(), 'svc-runner-')), statementTimeoutMs: () => 1500 });
    const key = '0190b5a0-0000-7000-8000-000000000001';
    const created = runner.call(key, { type: 'open', file: runner.fileOf(key), create: { tables: { t: { columns: { n: { type: 'integer' } } } } } }, { slow: true });
    // Queued while the open is in flight: all five leave together, behind it, in one message.
    const settled: number[] = [];
    const calls = [read('SELECT 1 AS n'), read('SELECT 2 AS n'), read(RUNAWAY), read('SELECT 4 AS n'), read('SELECT 5 AS n')].map((m, i) =>
      runner!
        .call<{ answer: { rows: { n: number }[] } }>(key, m)
        .then(
          (v) => ({ ok: true as const, n: v.answer.rows[0]!.n }),
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
    runner = new DataRunner({ log: createLogger(() => undefined), dir: mkdtempSync(join(tmpdir(), 'svc-runner-')), statementTimeoutMs: () => 60_000 });
    const key = '0190b5a0-0000-7000-8000-000000000002';
    await runner.call(key, { type: 'open', file: runner.fileOf(key), create: { tables: { t: { columns: { n: { type: 'integer' } } } } } }, { slow: true });
    const codes = [read(RUNAWAY), read('SELECT 2 AS n'), read('SELECT 3 AS n')].map((m) => runner!.call(key, m).then(() => 'ok', (e: { code?: string }) => e.code));
    await new Promise((r) => setTimeout(r, 100));
    await runner.close(); // kills the busy worker after its grace period
    runner = undefined;
    expect(await Promise.all(codes)).toEqual(['data_unavailable', 'data_unavailable', 'data_unavailable']);
  });
});
