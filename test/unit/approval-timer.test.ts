import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { delayFor, MAX_DELAY_MS, planTimeouts, RETRY_MS, TimeoutScheduler, type Expiring } from '../../src/lib/timer.js';

const iso = (ms: number) => new Date(ms).toISOString();
const T0 = Date.parse('2030-01-01T00:00:00.000Z');

describe('planTimeouts', () => {
  const cases: { name: string; candidates: [string, number][]; now: number; retryAt?: [string, number][]; due: string[]; wakeAt: number | null }[] = [
    { name: 'nothing waiting', candidates: [], now: T0, due: [], wakeAt: null },
    {
      name: 'one expired, one to come',
      candidates: [
        ['a', T0 - 5],
        ['b', T0 + 500],
      ],
      now: T0,
      due: ['a'],
      wakeAt: T0 + 500,
    },
    { name: 'expiring exactly now is due', candidates: [['a', T0]], now: T0, due: ['a'], wakeAt: null },
    {
      name: 'all expired, in order given',
      candidates: [
        ['a', T0 - 9],
        ['b', T0 - 1],
      ],
      now: T0,
      due: ['a', 'b'],
      wakeAt: null,
    },
    {
      name: 'wakes at the nearest of several',
      candidates: [
        ['a', T0 + 900],
        ['b', T0 + 300],
      ],
      now: T0,
      due: [],
      wakeAt: T0 + 300,
    },
    {
      name: 'a held-back one waits for its retry',
      candidates: [
        ['a', T0 - 5],
        ['b', T0 + 500],
      ],
      now: T0,
      retryAt: [['a', T0 + 100]],
      due: [],
      wakeAt: T0 + 100,
    },
    { name: 'a held-back one is due again once its retry time has come', candidates: [['a', T0 - 5]], now: T0, retryAt: [['a', T0]], due: ['a'], wakeAt: null },
  ];
  it.each(cases)('$name', (c) => {
    const candidates: Expiring[] = c.candidates.map(([id, at]) => ({ id, expiresAt: iso(at) }));
    expect(planTimeouts(candidates, c.now, new Map(c.retryAt ?? []))).toEqual({ due: c.due, wakeAt: c.wakeAt });
  });
});

describe('delayFor', () => {
  it.each([
    { name: 'due now', plan: { due: ['a'], wakeAt: T0 + 10 }, delay: 0 },
    { name: 'nothing waiting', plan: { due: [], wakeAt: null }, delay: null },
    { name: 'until the next expiry', plan: { due: [], wakeAt: T0 + 1234 }, delay: 1234 },
    { name: 'capped at the setTimeout ceiling', plan: { due: [], wakeAt: T0 + 40 * 86_400_000 }, delay: MAX_DELAY_MS },
    { name: 'never negative', plan: { due: [], wakeAt: T0 - 5 }, delay: 0 },
  ])('$name', ({ plan, delay }) => {
    expect(delayFor(plan, T0)).toBe(delay);
  });
});

/** An in-memory stand-in for the approvals table: fire() resolves (removes) the approval. */
function fakeStore(initial: [string, number][] = []) {
  const pending = new Map<string, number>(initial);
  const fired: { id: string; at: number }[] = [];
  let failing = new Set<string>();
  let stuck = new Set<string>();
  let readFailures = 0;
  const errors: (string | null)[] = [];
  const scheduler = new TimeoutScheduler({
    now: () => Date.now(),
    candidates: (now) => {
      if (readFailures > 0) {
        readFailures--;
        throw new Error('SQLITE_BUSY: database is locked');
      }
      const all = [...pending].map(([id, at]) => ({ id, expiresAt: iso(at) })).sort((a, b) => a.expiresAt.localeCompare(b.expiresAt));
      const due = all.filter((c) => Date.parse(c.expiresAt) <= now);
      const next = all.find((c) => Date.parse(c.expiresAt) > now);
      return next ? [...due, next] : due;
    },
    fire: (id, now) => {
      fired.push({ id, at: now });
      if (failing.has(id)) throw new Error('boom');
      if (!stuck.has(id)) pending.delete(id);
    },
    onError: (id) => errors.push(id),
  });
  return {
    pending,
    fired,
    errors,
    scheduler,
    fail: (ids: string[]) => (failing = new Set(ids)),
    stick: (ids: string[]) => (stuck = new Set(ids)),
    /** The next `n` reads of the table throw. */
    failReads: (n: number) => (readFailures = n),
  };
}

describe('TimeoutScheduler (fake clock)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('decides overdue approvals at once on start and arms the next expiry', async () => {
    const s = fakeStore([
      ['late', T0 - 60_000],
      ['soon', T0 + 5_000],
    ]);
    await s.scheduler.tick();
    expect(s.fired).toEqual([{ id: 'late', at: T0 }]);
    expect(s.scheduler.armed).toBe(true);

    await vi.advanceTimersByTimeAsync(4_999);
    expect(s.fired.map((f) => f.id)).toEqual(['late']);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.fired).toEqual([
      { id: 'late', at: T0 },
      { id: 'soon', at: T0 + 5_000 },
    ]);
    expect(s.scheduler.armed).toBe(false);
  });

  it('re-arms for an earlier expiry added later', async () => {
    const s = fakeStore([['later', T0 + 60_000]]);
    await s.scheduler.tick();
    s.pending.set('earlier', T0 + 1_000);
    await s.scheduler.arm();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(s.fired.map((f) => f.id)).toEqual(['earlier']);
    await vi.advanceTimersByTimeAsync(59_000);
    expect(s.fired.map((f) => f.id)).toEqual(['earlier', 'later']);
  });

  it('wakes harmlessly when the armed approval was decided by a person meanwhile', async () => {
    const s = fakeStore([['a', T0 + 1_000]]);
    await s.scheduler.tick();
    s.pending.delete('a');
    await s.scheduler.arm();
    expect(s.scheduler.armed).toBe(false);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(s.fired).toEqual([]);
  });

  it('holds back a failing approval for RETRY_MS instead of looping, without blocking the others', async () => {
    const s = fakeStore([
      ['bad', T0 + 1_000],
      ['good', T0 + 2_000],
    ]);
    s.fail(['bad']);
    await s.scheduler.tick();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(s.fired.map((f) => f.id)).toEqual(['bad', 'good']);
    expect(s.errors).toEqual(['bad']);

    await vi.advanceTimersByTimeAsync(RETRY_MS - 1_001);
    expect(s.fired.filter((f) => f.id === 'bad')).toHaveLength(1);
    s.fail([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.fired.filter((f) => f.id === 'bad')).toHaveLength(2);
    expect(s.pending.size).toBe(0);
  });

  it('holds back an approval that firing did not resolve', async () => {
    const s = fakeStore([['odd', T0 + 100]]);
    s.stick(['odd']);
    await s.scheduler.tick();
    await vi.advanceTimersByTimeAsync(100);
    expect(s.fired).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(RETRY_MS - 1);
    expect(s.fired).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.fired).toHaveLength(2);
  });

  it('reaches an expiry beyond the setTimeout ceiling by waking early and re-arming', async () => {
    const far = T0 + 40 * 86_400_000;
    const s = fakeStore([['far', far]]);
    await s.scheduler.tick();
    await vi.advanceTimersByTimeAsync(MAX_DELAY_MS);
    expect(s.fired).toEqual([]);
    expect(s.scheduler.armed).toBe(true);
    await vi.advanceTimersByTimeAsync(far - T0 - MAX_DELAY_MS);
    expect(s.fired).toEqual([{ id: 'far', at: far }]);
  });

  it('a failed read in a timer callback neither escapes nor stops the timeouts: it is reported and read again after RETRY_MS', async () => {
    const s = fakeStore([['a', T0 + 1_000]]);
    await s.scheduler.tick();
    s.failReads(1);
    // Without the catch, the exception escapes the timer callback (and would end the daemon).
    await expect(vi.advanceTimersByTimeAsync(1_000)).resolves.toBeDefined();
    expect(s.errors).toEqual([null]);
    expect(s.fired).toEqual([]);
    expect(s.scheduler.armed).toBe(true);
    await vi.advanceTimersByTimeAsync(RETRY_MS - 1);
    expect(s.fired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.fired).toEqual([{ id: 'a', at: T0 + 1_000 + RETRY_MS }]);
    expect(s.pending.size).toBe(0);
  });

  it('a failed read on start (tick) does not throw and is retried', async () => {
    const s = fakeStore([['late', T0 - 5]]);
    s.failReads(1);
    await expect((async () => await s.scheduler.tick())()).resolves.toBeUndefined();
    expect(s.errors).toEqual([null]);
    await vi.advanceTimersByTimeAsync(RETRY_MS);
    expect(s.fired).toEqual([{ id: 'late', at: T0 + RETRY_MS }]);
  });

  it('a failed read when re-arming after a change does not leave the timer unset', async () => {
    const s = fakeStore([['a', T0 + 1_000]]);
    await s.scheduler.tick();
    s.pending.set('b', T0 + 2_000);
    s.failReads(1);
    // arm() cleared the pending wake-up before reading; the event log would swallow a throw here.
    await expect((async () => await s.scheduler.arm())()).resolves.toBeUndefined();
    expect(s.errors).toEqual([null]);
    expect(s.scheduler.armed).toBe(true);
    await vi.advanceTimersByTimeAsync(RETRY_MS);
    expect(s.fired.map((f) => f.id)).toEqual(['a', 'b']);
  });

  it('a throwing onError does not escape either', async () => {
    const scheduler = new TimeoutScheduler({
      now: () => Date.now(),
      candidates: () => {
        throw new Error('disk I/O error');
      },
      fire: () => {},
      onError: () => {
        throw new Error('log file gone');
      },
    });
    await expect((async () => await scheduler.tick())()).resolves.toBeUndefined();
    await expect(vi.advanceTimersByTimeAsync(RETRY_MS * 3)).resolves.toBeDefined();
    scheduler.stop();
  });

  it('fires nothing after stop', async () => {
    const s = fakeStore([['a', T0 + 1_000]]);
    await s.scheduler.tick();
    s.scheduler.stop();
    await s.scheduler.arm();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(s.fired).toEqual([]);
    expect(s.scheduler.armed).toBe(false);
  });
});
