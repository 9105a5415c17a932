import { describe, expect, it } from 'vitest';
import { afterFailure, afterSuccess, billingMs, classifyFailure, cooldownMs, HEALTHY, statusOf, unavailableUntil, type ProviderHealth } from '../../src/resources/providers/health.js';

const MIN = 60_000;
const H = 60 * MIN;

describe('cooldown schedule', () => {
  it.each([
    [1, 1 * MIN],
    [2, 5 * MIN],
    [3, 25 * MIN],
    [4, 60 * MIN],
    [5, 60 * MIN],
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
  it('walks 1, 5, 25, 60 minutes on consecutive transient failures, and a success clears it', () => {
    let now = 1_000_000;
    let h: ProviderHealth = HEALTHY;
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
    expect(h.errorCount).toBe(5);
    expect(h.lastErrorReason).toBe('HTTP 429');
    h = afterSuccess();
    expect(h).toEqual(HEALTHY);
    expect(afterFailure(h, 'transient', 'x', now).cooldownUntil).toBe(now + MIN);
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

  it('marks a refused key expired until a success, and ignores the request\'s own faults', () => {
    const h = afterFailure(HEALTHY, 'auth', 'HTTP 401', 0);
    expect(statusOf(h, true, 0)).toBe('expired');
    expect(unavailableUntil(h, 0)).toBeNull();
    expect(afterFailure(HEALTHY, 'request', 'HTTP 400', 0)).toBe(HEALTHY);
    expect(statusOf(HEALTHY, false, 0)).toBe('unconfigured');
  });
});
