import { describe, expect, it } from 'vitest';
import { checkTransition, LEGAL_MOVES, TASK_STATES, type TaskState } from '../../src/resources/tasks/state.js';

// DESIGN section 5, restated here independently of the implementation's table.
const LEGAL = new Set([
  'draft>pending',
  'pending>assigned',
  'pending>awaiting_approval',
  'assigned>in_progress',
  'assigned>awaiting_approval',
  'in_progress>review',
  'in_progress>done',
  'in_progress>failed',
  'in_progress>awaiting_approval',
  'review>done',
  'review>failed',
  'review>awaiting_approval',
  'awaiting_approval>assigned',
  'awaiting_approval>pending',
  'awaiting_approval>done',
  'awaiting_approval>failed',
  'failed>pending',
]);

const pairs = TASK_STATES.flatMap((from) => TASK_STATES.map((to) => [from, to, LEGAL.has(`${from}>${to}`)] as const));

describe('task state machine', () => {
  it('has the eight states of DESIGN', () => {
    expect([...TASK_STATES].sort()).toEqual(['assigned', 'awaiting_approval', 'done', 'draft', 'failed', 'in_progress', 'pending', 'review']);
    expect(pairs).toHaveLength(64);
  });

  it.each(pairs)('%s → %s legal: %s', (from, to, legal) => {
    const r = checkTransition(from, to);
    expect(r.ok).toBe(legal);
    if (!r.ok) {
      expect(r.code).toBe('invalid_transition');
      expect(r.reason).toContain(`from ${from} to ${to}`);
    }
  });

  it('the exported table is exactly the legal set', () => {
    const fromTable = Object.entries(LEGAL_MOVES).flatMap(([from, tos]) => tos.map((to) => `${from}>${to}`));
    expect(new Set(fromTable)).toEqual(LEGAL);
  });

  it('done is terminal', () => {
    expect(LEGAL_MOVES.done).toEqual([]);
    const r = checkTransition('done', 'pending');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain('terminal');
  });

  it('open dependencies block in_progress with a conflict naming them', () => {
    const r = checkTransition('assigned', 'in_progress', { openDependencies: ['a', 'b'] });
    expect(r).toMatchObject({ ok: false, code: 'conflict' });
    if (!r.ok) expect(r.reason).toMatch(/a, b/);
    expect(checkTransition('assigned', 'in_progress', { openDependencies: [] }).ok).toBe(true);
  });

  it('open dependencies do not block other moves', () => {
    expect(checkTransition('pending', 'assigned', { openDependencies: ['a'] }).ok).toBe(true);
    expect(checkTransition('in_progress', 'review', { openDependencies: ['a'] }).ok).toBe(true);
  });

  it('an illegal move is reported as illegal even when a guard would also fail', () => {
    expect(checkTransition('pending', 'in_progress', { openDependencies: ['a'] })).toMatchObject({ ok: false, code: 'invalid_transition' });
  });

  it('failed → pending is a retry, refused once maxRetries are used', () => {
    expect(checkTransition('failed', 'pending', { retries: 2, maxRetries: 3 })).toEqual({ ok: true, retry: true });
    expect(checkTransition('failed', 'pending', { retries: 3, maxRetries: 3 })).toMatchObject({ ok: false, code: 'conflict' });
    expect(checkTransition('failed', 'pending', { retries: 0, maxRetries: 0 })).toMatchObject({ ok: false, code: 'conflict' });
    const others: [TaskState, TaskState][] = [
      ['draft', 'pending'],
      ['awaiting_approval', 'pending'],
    ];
    for (const [from, to] of others) expect(checkTransition(from, to, { retries: 9, maxRetries: 0 })).toEqual({ ok: true, retry: false });
  });

  it('tasks.requireReview refuses in_progress → done only, naming the setting', () => {
    expect(checkTransition('in_progress', 'done', { requireReview: false })).toEqual({ ok: true, retry: false });
    const r = checkTransition('in_progress', 'done', { requireReview: true });
    expect(r).toMatchObject({ ok: false, code: 'invalid_transition' });
    if (!r.ok) expect(r.reason).toContain('tasks.requireReview');
    for (const [from, to] of [
      ['review', 'done'],
      ['awaiting_approval', 'done'],
      ['in_progress', 'review'],
      ['in_progress', 'failed'],
    ] as [TaskState, TaskState][]) {
      expect(checkTransition(from, to, { requireReview: true }).ok).toBe(true);
    }
  });
});
