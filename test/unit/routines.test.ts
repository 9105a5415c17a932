import { describe, expect, it } from 'vitest';
import { fill, lookup, placeholders } from '../../src/resources/playbooks/template.js';
import { cronProblems, dueSince, localDate, nextAfter, nextTimes, zoneProblem } from '../../src/resources/routines/cron.js';
import { compileDataFilter, DataFilter } from '../../src/resources/routines/filter.js';
import { TriggerIndex } from '../../src/resources/routines/match.js';

const iso = (t: number) => new Date(t).toISOString();
const at = (s: string) => Date.parse(s);

describe('cron expressions', () => {
  it('takes the standard forms: ranges, steps, lists, names, aliases', () => {
    for (const e of [
      '* * * * *',
      '*/15 9-17 * * MON-FRI',
      '0 9,13 1,15 * *',
      '0 0 1 JAN,jul *',
      '5 4 * * sun',
      '0 22 * * 1-5',
      '0 0-23/2 * * *',
      '@daily',
      '@hourly',
      '@weekly',
      '@monthly',
      '@yearly',
      '@annually',
      '@midnight',
      '0 9 * * 7',
    ]) {
      expect(cronProblems(e, 'schedule'), e).toEqual([]);
    }
  });

  it('names the field and the position of what is wrong', () => {
    const one = (e: string) => cronProblems(e, 'schedule').map((p) => `${p.path}: ${p.message}`);
    expect(one('61 * * * *')).toEqual(['schedule.cron: minute field "61" at position 1: 61 (at position 1) is out of range 0-59']);
    expect(one('0 24 * * *')).toEqual(['schedule.cron: hour field "24" at position 3: 24 (at position 3) is out of range 0-23']);
    expect(one('0 0 0 * *')[0]).toMatch(/day of month field "0" at position 5: 0 .* out of range 1-31/);
    expect(one('0 0 * 13 *')[0]).toMatch(/month field "13" at position 7/);
    expect(one('0 0 * * 8')[0]).toMatch(/day of week field "8" at position 9/);
    expect(one('0  9 * * FRY')[0]).toMatch(/day of week field "FRY" at position 10: .*illegal characters/);
    expect(one('*/0 * * * *')[0]).toMatch(/minute field "\*\/0" at position 1: .*stepping: 0/);
    expect(one('5-1 * * * *')[0]).toMatch(/minute field "5-1" at position 1: From value is larger than to value/);
    expect(one('* * * *')[0]).toMatch(/has 4 fields; a cron expression has 5/);
    expect(one('@reboot')[0]).toMatch(/unknown alias "@reboot" at position 1/);
  });

  it('knows IANA zones and refuses others', () => {
    expect(zoneProblem('Europe/Berlin')).toBeNull();
    expect(zoneProblem('UTC')).toBeNull();
    expect(zoneProblem('Europe/Nowhere')).toMatch(/unknown time zone "Europe\/Nowhere"/);
  });

  it('computes the next times in the zone', () => {
    expect(nextTimes({ cron: '0 9 * * MON', timezone: 'America/New_York' }, at('2030-01-01T00:00:00Z'), 2).map(iso)).toEqual(['2030-01-07T14:00:00.000Z', '2030-01-14T14:00:00.000Z']);
    // Strictly after: a time exactly on a firing gives the next one.
    expect(iso(nextAfter({ cron: '0 9 * * *', timezone: 'UTC' }, at('2030-01-01T09:00:00Z'))!)).toBe('2030-01-02T09:00:00.000Z');
    expect(nextAfter({ cron: '0 0 30 2 *', timezone: 'UTC' }, at('2030-01-01T00:00:00Z'))).toBeNull();
  });

  it('daylight saving: a fixed time in the skipped hour runs once after it, in the repeated hour once; an interval keeps real time', () => {
    const berlin = (cron: string) => ({ cron, timezone: 'Europe/Berlin' });
    expect(nextTimes(berlin('30 2 * * *'), at('2030-03-30T12:00:00Z'), 2).map(iso)).toEqual(['2030-03-31T01:00:00.000Z', '2030-04-01T00:30:00.000Z']);
    expect(nextTimes(berlin('30 2 * * *'), at('2030-10-26T12:00:00Z'), 2).map(iso)).toEqual(['2030-10-27T00:30:00.000Z', '2030-10-28T01:30:00.000Z']);
    // 02:00 and 02:30 local happen twice on 27 October: an every-30-minutes job runs on both passes.
    expect(nextTimes(berlin('*/30 * * * *'), at('2030-10-26T23:59:00Z'), 6).map(iso)).toEqual([
      '2030-10-27T00:00:00.000Z',
      '2030-10-27T00:30:00.000Z',
      '2030-10-27T01:00:00.000Z',
      '2030-10-27T01:30:00.000Z',
      '2030-10-27T02:00:00.000Z',
      '2030-10-27T02:30:00.000Z',
    ]);
    // In the skipped hour an interval job has nothing to run: 01:30 local, then 03:00.
    expect(nextTimes(berlin('*/30 * * * *'), at('2030-03-31T00:15:00Z'), 2).map(iso)).toEqual(['2030-03-31T00:30:00.000Z', '2030-03-31T01:00:00.000Z']);
  });

  it('counts the times due since the first one missed, with a cap for long downtimes', () => {
    const hourly = { cron: '0 * * * *', timezone: 'UTC' };
    expect(dueSince(hourly, at('2030-01-01T10:00:00Z'), at('2030-01-01T12:20:00Z'))).toEqual({ count: 3, capped: false, last: at('2030-01-01T12:00:00Z'), next: at('2030-01-01T13:00:00Z') });
    expect(dueSince(hourly, at('2030-01-01T10:00:00Z'), at('2030-01-01T10:00:00Z'))).toEqual({ count: 1, capped: false, last: at('2030-01-01T10:00:00Z'), next: at('2030-01-01T11:00:00Z') });
    const minutely = { cron: '* * * * *', timezone: 'UTC' };
    const month = dueSince(minutely, at('2030-01-01T00:00:00Z'), at('2030-01-31T00:00:30Z'), 100);
    expect(month).toEqual({ count: 100, capped: true, last: at('2030-01-31T00:00:00Z'), next: at('2030-01-31T00:01:00Z') });
  });

  it('gives the local date of a time', () => {
    expect(localDate(at('2030-01-01T23:30:00Z'), 'Europe/Berlin')).toBe('2030-01-02');
    expect(localDate(at('2030-01-01T23:30:00Z'), 'UTC')).toBe('2030-01-01');
  });
});

describe('trigger data filters', () => {
  const m = (f: unknown) => compileDataFilter(DataFilter.parse(f));
  it('equals, one of, not, comparisons, prefix; absent fields are null', () => {
    const e = { to: 'failed', attempt: 3, title: 'deploy web', assignTo: null, usage: { costUsd: 0.5 } };
    expect(m({ to: 'failed' })(e)).toBe(true);
    expect(m({ to: 'done' })(e)).toBe(false);
    expect(m({ to: ['done', 'failed'] })(e)).toBe(true);
    expect(m({ to: { not: ['done', 'failed'] } })(e)).toBe(false);
    expect(m({ assignTo: { not: null } })(e)).toBe(false);
    expect(m({ missing: null })(e)).toBe(true);
    expect(m({ attempt: { gte: 3, lt: 4 } })(e)).toBe(true);
    expect(m({ attempt: { gt: 3 } })(e)).toBe(false);
    expect(m({ title: { prefix: 'deploy ' } })(e)).toBe(true);
    expect(m({ 'usage.costUsd': { gt: 0.25 } })(e)).toBe(true);
    expect(m({ to: 'failed', attempt: 2 })(e)).toBe(false);
    expect(m({})(e)).toBe(true);
  });
  it('refuses what it cannot read', () => {
    expect(DataFilter.safeParse({ to: { between: [1, 2] } }).success).toBe(false);
    expect(DataFilter.safeParse({ 'a b': 1 }).success).toBe(false);
    expect(DataFilter.safeParse({ to: {} }).success).toBe(false);
    expect(DataFilter.safeParse(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`f${i}`, 1]))).success).toBe(false);
  });
  it('reads only own properties', () => {
    expect(m({ 'constructor.name': 'Object' })({})).toBe(false);
  });
});

describe('dotted placeholders in the template engine', () => {
  const vars = { event: { data: { taskId: 't1', attempt: 2, labels: ['a', 'b'], assignTo: null } }, firing: { time: '2030-01-01T00:00:00.000Z' } };
  it('finds and fills them; whole ones keep their type, text takes JSON for objects', () => {
    expect(placeholders({ t: 'x {{event.data.taskId}} {{ firing.time }}' }).map((p) => p.name)).toEqual(['event.data.taskId', 'firing.time']);
    expect(
      fill(
        { title: 'Triage {{event.data.taskId}}', n: '{{event.data.attempt}}', labels: '{{event.data.labels}}', who: '{{event.data.assignTo}}', at: 'at {{firing.time}}', l: 'l={{event.data.labels}}' },
        vars,
      ),
    ).toEqual({
      title: 'Triage t1',
      n: 2,
      labels: ['a', 'b'],
      at: 'at 2030-01-01T00:00:00.000Z',
      l: 'l=["a","b"]',
    });
  });
  it('walks own properties only', () => {
    expect(lookup(vars, 'event.data.taskId')).toBe('t1');
    expect(lookup(vars, 'event.data.labels.1')).toBe('b');
    expect(lookup(vars, 'event.constructor')).toBeUndefined();
    expect(lookup(vars, 'event.data.taskId.length')).toBeUndefined();
  });
});

describe('the trigger index', () => {
  const index = new TriggerIndex([
    { name: 'failed', trigger: { event: 'task:transition', filter: { to: 'failed' } } },
    { name: 'done-or-review', trigger: { event: 'task:transition', filter: { to: ['done', 'review'], from: { not: 'draft' } } } },
    { name: 'any-task', trigger: { event: 'task:' } },
    { name: 'unassigned', trigger: { event: 'task:created', filter: { assignTo: null } } },
    { name: 'costly', trigger: { event: 'run:finished', filter: { 'usage.costUsd': { gt: 1 } } } },
    ...Array.from({ length: 1000 }, (_, i) => ({ name: `t${i}`, trigger: { event: 'task:created', filter: { title: `never ${i}` } } })),
  ]);
  it('finds what an event sets off, by name, then by the data', () => {
    expect(index.matching('task:transition', { taskId: 'x', from: 'in_progress', to: 'failed' }).sort()).toEqual(['any-task', 'failed']);
    expect(index.matching('task:transition', { taskId: 'x', from: 'in_progress', to: 'review' }).sort()).toEqual(['any-task', 'done-or-review']);
    expect(index.matching('task:transition', { taskId: 'x', from: 'draft', to: 'done' })).toEqual(['any-task']);
    expect(index.matching('task:created', { taskId: 'x', title: 'never 7', assignTo: 'ana' }).sort()).toEqual(['any-task', 't7']);
    expect(index.matching('task:created', { taskId: 'x', title: 'y' }).sort()).toEqual(['any-task', 'unassigned']);
    expect(index.matching('run:finished', { usage: { costUsd: 2 } })).toEqual(['costly']);
    expect(index.matching('mission:created', {})).toEqual([]);
    expect(index.hears('mission:created')).toBe(false);
    expect(index.hears('task:removed')).toBe(true);
  });
  it('checks a thousand triggers on one field in a map lookup, not a thousand filters', () => {
    const data = { taskId: 'x', title: 'something else', assignTo: 'ana' };
    const t0 = performance.now();
    for (let i = 0; i < 10_000; i++) index.matching('task:created', data);
    // 10,000 events: a filter each for 1,000 triggers would be ten million checks.
    expect(performance.now() - t0).toBeLessThan(500);
  });
});
