import { describe, expect, it } from 'vitest';
import { RecentFailures } from '../../src/resources/providers/failures.js';
import {
  afterFailure,
  afterSuccess,
  afterUsageLimit,
  billingMs,
  classifyFailure,
  cooldownMs,
  FAILURES_BEFORE_COOLDOWN,
  HEALTHY,
  RETRY_AFTER_MAX_MS,
  statusOf,
  unavailableUntil,
  USAGE_LIMIT_MAX_MS,
  type ProviderHealth,
} from '../../src/resources/providers/health.js';

const MIN = 60_000;
const H = 60 * MIN;

describe('cooldown schedule', () => {
  it.each([
    [1, 0],
    [2, 0],
    [3, 1 * MIN],
    [4, 5 * MIN],
    [5, 25 * MIN],
    [6, 60 * MIN],
    [7, 60 * MIN],
    [50, 60 * MIN],
  ])('failure %i cools down for %i ms', (n, ms) => expect(cooldownMs(n)).toBe(ms));
});

describe('billing schedule', () => {
  it.each([
    [1, 5 * H],
    [2, 10 * H],
    [3, 20 * H],
    [4, 24 * H],
    [40, 24 * H],
  ])('billing failure %i disables for %i ms', (n, ms) => expect(billingMs(n)).toBe(ms));
});

describe('classification', () => {
  it.each([
    [429, null, 'transient'],
    [500, null, 'transient'],
    [503, null, 'transient'],
    [408, null, 'transient'],
    ['network', null, 'transient'],
    [402, null, 'billing'],
    [429, 'insufficient_quota', 'billing'],
    [401, null, 'auth'],
    [403, null, 'auth'],
    [400, null, 'request'],
    [404, null, 'request'],
  ] as const)('%s %s is %s', (status, code, kind) => expect(classifyFailure(status, code)).toBe(kind));
});

describe('moving through the schedules on a fake clock', () => {
  it(`stays active through ${FAILURES_BEFORE_COOLDOWN - 1} failures, then walks 1, 5, 25, 60 minutes; a success clears it`, () => {
    let now = 1_000_000;
    let h: ProviderHealth = HEALTHY;
    for (let i = 1; i < FAILURES_BEFORE_COOLDOWN; i++) {
      h = afterFailure(h, 'transient', `HTTP 500 #${i}`, now);
      expect(statusOf(h, true, now)).toBe('active');
      expect(unavailableUntil(h, now)).toBeNull();
      expect(h.errorCount).toBe(i);
    }
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      h = afterFailure(h, 'transient', 'HTTP 429', now);
      expect(statusOf(h, true, now)).toBe('cooldown');
      waits.push(unavailableUntil(h, now)! - now);
      now = h.cooldownUntil!; // the clock reaches the end of the cooldown
      expect(statusOf(h, true, now)).toBe('active');
      expect(unavailableUntil(h, now)).toBeNull();
    }
    expect(waits).toEqual([1, 5, 25, 60, 60].map((m) => m * MIN));
    expect(h.errorCount).toBe(FAILURES_BEFORE_COOLDOWN + 4);
    expect(h.lastErrorReason).toBe('HTTP 429');
    h = afterSuccess();
    expect(h).toEqual(HEALTHY);
    expect(afterFailure(h, 'transient', 'x', now).cooldownUntil).toBeNull();
  });

  it("does not count a failure that is the request's (a retry, or one it causes everywhere), but keeps its reason", () => {
    let h: ProviderHealth = HEALTHY;
    for (let i = 0; i < 10; i++) h = afterFailure(h, 'transient', 'HTTP 500', 0, { counted: false });
    expect(h).toMatchObject({ errorCount: 0, cooldownUntil: null, lastErrorReason: 'HTTP 500' });
    expect(statusOf(h, true, 0)).toBe('active');
  });

  it('keeps a provider out as long as its own Retry-After asks, at once, and never longer than the cap', () => {
    const h = afterFailure(HEALTHY, 'transient', 'HTTP 429', 1000, { retryAfterMs: 7000 });
    expect(h).toMatchObject({ errorCount: 1, cooldownUntil: 8000 });
    expect(statusOf(h, true, 7999)).toBe('cooldown');
    expect(statusOf(h, true, 8000)).toBe('active');
    // A retry of the same request still says when the upstream will take calls again.
    expect(afterFailure(HEALTHY, 'transient', 'HTTP 429', 0, { counted: false, retryAfterMs: 3000 }).cooldownUntil).toBe(3000);
    expect(afterFailure(HEALTHY, 'transient', 'HTTP 429', 0, { retryAfterMs: 10 * H }).cooldownUntil).toBe(RETRY_AFTER_MAX_MS);
    // The longer of the schedule and the upstream's word wins.
    let s: ProviderHealth = HEALTHY;
    for (let i = 0; i < FAILURES_BEFORE_COOLDOWN; i++) s = afterFailure(s, 'transient', 'HTTP 503', 0, { retryAfterMs: 2000 });
    expect(s.cooldownUntil).toBe(1 * MIN);
  });

  it('disables for 5 h, then 10 h on billing failures and reports billing_disabled over a cooldown', () => {
    const now = 0;
    let h = afterFailure(HEALTHY, 'billing', 'HTTP 402', now);
    expect(h.disabledUntil).toBe(5 * H);
    h = afterFailure(h, 'transient', 'HTTP 500', now);
    expect(statusOf(h, true, now)).toBe('billing_disabled');
    expect(unavailableUntil(h, now)).toBe(5 * H);
    h = afterFailure(h, 'billing', 'HTTP 402', 5 * H);
    expect(h.disabledUntil).toBe(15 * H);
  });

  it("marks a refused key expired until a success, and ignores the request's own faults", () => {
    const h = afterFailure(HEALTHY, 'auth', 'HTTP 401', 0);
    expect(statusOf(h, true, 0)).toBe('expired');
    expect(unavailableUntil(h, 0)).toBeNull();
    expect(afterFailure(HEALTHY, 'request', 'HTTP 400', 0)).toBe(HEALTHY);
    expect(statusOf(HEALTHY, false, 0)).toBe('unconfigured');
  });
});

describe('RecentFailures: where a request failed lately', () => {
  it('answers where the same request failed before, forgets after its time, and keeps at most its size', () => {
    const f = new RecentFailures(10 * MIN, 3);
    expect([...f.record('req-a', 'p1', 0)]).toEqual([]);
    expect([...f.record('req-a', 'p1', 1000)]).toEqual(['p1']); // a retry on the same provider
    expect([...f.record('req-a', 'p2', 2000)]).toEqual(['p1']); // the same request, another provider
    expect([...f.record('req-a', 'p3', 3000)].sort()).toEqual(['p1', 'p2']);
    expect([...f.record('req-b', 'p1', 3000)]).toEqual([]); // another request
    expect([...f.record('req-a', 'p1', 3000 + 10 * MIN + 1)]).toEqual([]); // too long ago: a new failure
    f.record('req-c', 'p1', 10 * MIN + 5000);
    f.record('req-d', 'p1', 10 * MIN + 5000);
    f.record('req-e', 'p1', 10 * MIN + 5000); // four kept at most three: the oldest (req-b, then req-a) go
    expect([...f.record('req-a', 'p1', 10 * MIN + 6000)]).toEqual([]);
  });
});

describe("a usage limit of an agent's CLI", () => {
  it('pauses the provider until the reset it gave, held between a minute and a week from now', () => {
    const now = 10 * H;
    const h = afterUsageLimit(HEALTHY, 'usage limit', now, now + 3 * H);
    expect(h).toMatchObject({ cooldownUntil: now + 3 * H, pausedUntil: now + 3 * H, lastErrorReason: 'usage limit' });
    expect(statusOf(h, true, now)).toBe('cooldown');
    // A reset already past is not believed: a minute.
    expect(afterUsageLimit(HEALTHY, 'x', now, now - H).pausedUntil).toBe(now + MIN);
    expect(afterUsageLimit(HEALTHY, 'x', now, now + 400 * 24 * H).pausedUntil).toBe(now + USAGE_LIMIT_MAX_MS);
    // A later limit never shortens a pause that is on.
    expect(afterUsageLimit(h, 'x', now, now + H).pausedUntil).toBe(now + 3 * H);
  });

  it("without a reset, walks the provider's backoff from its first step: 1, 5, 25, 60 minutes", () => {
    const now = 0;
    let h: ProviderHealth = HEALTHY;
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      h = afterUsageLimit({ ...h, cooldownUntil: null, pausedUntil: null }, 'HTTP 429', now, null);
      waits.push(h.pausedUntil! - now);
    }
    expect(waits).toEqual([1, 5, 25, 60, 60].map((m) => m * MIN));
  });

  it("is shown though the daemon has no key for the provider (the CLI logs in on its own), and a chat's success does not end it", () => {
    const now = 0;
    const h = afterUsageLimit(HEALTHY, 'usage limit', now, now + H);
    expect(statusOf(HEALTHY, false, now)).toBe('unconfigured');
    expect(statusOf(h, false, now)).toBe('cooldown');
    expect(statusOf(h, false, now + 2 * H)).toBe('unconfigured');
    const served = afterSuccess(h, now + MIN);
    expect(served).toMatchObject({ errorCount: 0, cooldownUntil: now + H, pausedUntil: now + H });
    // Over, but not yet said to be over: the pause stays for the runners to say it; the cooldown goes.
    expect(afterSuccess(h, now + 2 * H)).toMatchObject({ cooldownUntil: null, pausedUntil: now + H });
    expect(afterSuccess({ ...h, pausedUntil: null }, now)).toBe(HEALTHY);
  });
});
