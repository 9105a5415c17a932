import { describe, expect, it } from 'vitest';
import { STATE_MIGRATIONS } from '../../src/state-schema.js';
import { openDatabase } from '../../src/db/open.js';
import { listQuery, type ListFilter } from '../../src/resources/tasks/store.js';

// Listing must stay fast with 100,000 tasks: every filter combination, with or without a cursor,
// walks an index in id order (no full scan of rows, no sort of the matches).
const db = (await openDatabase(':memory:', STATE_MIGRATIONS)).raw;
const filters: Omit<ListFilter, 'limit'>[] = [
  {},
  { status: 'done' },
  { assignTo: 'a' },
  { missionId: 'm' },
  { status: 'done', assignTo: 'a' },
  { status: 'pending', missionId: 'm' },
  { assignTo: 'a', missionId: 'm' },
  { status: 'failed', assignTo: 'a', missionId: 'm' },
];
const cases = filters.flatMap((f) => [f, { ...f, before: '0190f000-0000-7000-8000-000000000000' }]);

describe('task list query plans', () => {
  it.each(cases.map((c) => [JSON.stringify(c), c] as const))('%s', (_n, f) => {
    const q = listQuery({ ...f, limit: 51 });
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${q.sql}`).all(...q.args) as { detail: string }[]).map((r) => r.detail);
    expect(plan).toHaveLength(1);
    const filtered = f.status !== undefined || f.assignTo !== undefined || f.missionId !== undefined;
    // A filter must be an index search on its column; unfiltered pages read the id index in order.
    if (filtered) expect(plan[0]).toMatch(/^SEARCH tasks USING INDEX tasks_\w+ \((status|assign_to|mission_id)=\?/);
    else if (f.before) expect(plan[0]).toMatch(/^SEARCH tasks USING INDEX \w+ \(id<\?\)/);
    else expect(plan[0]).toMatch(/^SCAN tasks USING INDEX /);
    expect(plan.join(' ')).not.toMatch(/TEMP B-TREE/);
  });
});

// Claims are atomic because a status change is a compare-and-set on the state it was read in: of two
// writers that both read "pending", the second finds the row moved and changes nothing (and the
// service answers 409). Two HTTP claims cannot interleave inside one process, so this is where the
// guard itself is tested.
describe('setStatus compare-and-set', () => {
  it('lets exactly one of two writers holding the same stale state win', async () => {
    const { insertTask, setStatus, getTask } = await import('../../src/resources/tasks/store.js');
    const cas = await openDatabase(':memory:', STATE_MIGRATIONS);
    const now = new Date().toISOString();
    await insertTask(cas, { id: 't1', title: 't', description: null, assignTo: null, missionId: null, status: 'pending', priority: 'normal', labels: [], maxRetries: 3, sideEffects: false, now });
    const change = { retry: false, now };
    expect(await setStatus(cas, 't1', 'pending', 'assigned', change)).toBe(true);
    expect(await setStatus(cas, 't1', 'pending', 'assigned', change)).toBe(false);
    expect((await getTask(cas, 't1'))!.status).toBe('assigned');
  });
});
