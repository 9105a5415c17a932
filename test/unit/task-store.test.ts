import { describe, expect, it } from 'vitest';
import { STATE_MIGRATIONS } from '../../src/db/migrations.js';
import { openDatabase } from '../../src/db/open.js';
import { listQuery, type ListFilter } from '../../src/resources/tasks/store.js';

// Listing must stay fast with 100,000 tasks: every filter combination, with or without a cursor,
// walks an index in id order (no full scan of rows, no sort of the matches).
const db = openDatabase(':memory:', STATE_MIGRATIONS);
const filters: Omit<ListFilter, 'limit'>[] = [{}, { status: 'done' }, { assignTo: 'a' }, { missionId: 'm' }, { status: 'done', assignTo: 'a' }, { status: 'pending', missionId: 'm' }, { assignTo: 'a', missionId: 'm' }, { status: 'failed', assignTo: 'a', missionId: 'm' }];
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
