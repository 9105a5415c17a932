import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataFile } from '../../src/resources/data/engine.js';
import { tempDir } from '../temp.js';
import { monotonic, systemClock } from '../../src/lib/clock.js';

// A write that reaches its commit after the request's deadline rolls back, so the daemon's 503
// for a stopped statement ("nothing it did was kept") is true even when the statement finished
// just as it was being stopped.

describe('DataFile deadline', () => {
  const dir = tempDir('svc-engine-');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const grants = { read: '*' as const, write: '*' as const };

  it('rolls back a batch, a write query and a migration past the deadline; reads still answer', () => {
    const f = new DataFile(join(dir, 'a.sqlite'), systemClock, { tables: { t: { columns: { n: { type: 'integer' } } } } });
    const count = () => f.query({ sql: 'SELECT count(*) AS c FROM t', params: [], mode: 'read', maxRows: 1, grants }).answer.rows[0];
    f.deadline = monotonic() - 1;
    expect(() => f.batch([{ op: 'insert', table: 't', values: { n: 1 } }])).toThrow(/rolled back/);
    expect(() => f.query({ sql: 'INSERT INTO t (n) VALUES (2)', params: [], mode: 'write', maxRows: 1, grants })).toThrow(/rolled back/);
    expect(() => f.migrate({ id: 'm', expectedVersion: 1, steps: [{ op: 'addColumn', table: 't', column: 'x', definition: { type: 'text', nullable: true } }] }, 'c')).toThrow(/rolled back/);
    expect(count()).toEqual({ c: 0 });
    expect(f.info().schemaVersion).toBe(1);
    expect(f.migrations()).toEqual([]);
    f.deadline = Infinity;
    expect(f.batch([{ op: 'insert', table: 't', values: { n: 1 } }]).answer[0]!.total).toBe(1);
    expect(count()).toEqual({ c: 1 });
    f.close();
  });
});
