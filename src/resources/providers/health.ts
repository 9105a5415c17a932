// How upstream failures move a provider out of service and back: pure functions of the stored
// counters and the clock, so every rule is unit-tested with a fake clock.

export interface ProviderHealth {
  /** Consecutive transient failures (429, 5xx, network): drives the cooldown schedule. */
  errorCount: number;
  /** Consecutive billing failures (402, insufficient quota): drives the billing schedule. */
  billingCount: number;
  cooldownUntil: number | null;
  disabledUntil: number | null;
  /** The upstream said the key is not (or no longer) valid; cleared by the next success. */
  authFailed: boolean;
  lastErrorReason: string | null;
}

export const HEALTHY: ProviderHealth = { errorCount: 0, billingCount: 0, cooldownUntil: null, disabledUntil: null, authFailed: false, lastErrorReason: null };

export type Failure = 'transient' | 'billing' | 'auth' | 'request';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const COOLDOWN_STEPS_MIN = [1, 5, 25, 60];

/** 1, 5, 25, then 60 minutes for the 1st, 2nd, 3rd and every later consecutive transient failure. */
export function cooldownMs(consecutive: number): number {
  const i = Math.min(Math.max(consecutive, 1), COOLDOWN_STEPS_MIN.length) - 1;
  return COOLDOWN_STEPS_MIN[i]! * MINUTE;
}

/** 5 h × 2^(n−1), capped at 24 h. */
export function billingMs(consecutive: number): number {
  const n = Math.max(consecutive, 1);
  return Math.min(5 * HOUR * 2 ** Math.min(n - 1, 10), 24 * HOUR);
}

/**
 * What an upstream answer means for the provider: 429, 5xx and network errors are transient; 402
 * and OpenAI's insufficient_quota (sent with 429) are billing; 401 and 403 say the key is bad;
 * anything else is the request's own fault and says nothing about the provider.
 */
export function classifyFailure(status: number | 'network', errorCode?: string | null): Failure {
  if (status === 'network') return 'transient';
  if (status === 402 || errorCode === 'insufficient_quota' || errorCode === 'billing_hard_limit_reached') return 'billing';
  if (status === 401 || status === 403) return 'auth';
  if (status === 408 || status === 429 || status >= 500) return 'transient';
  return 'request';
}

export function afterFailure(h: ProviderHealth, failure: Failure, reason: string, now: number): ProviderHealth {
  switch (failure) {
    case 'transient': {
      const errorCount = h.errorCount + 1;
      return { ...h, errorCount, cooldownUntil: now + cooldownMs(errorCount), lastErrorReason: reason };
    }
    case 'billing': {
      const billingCount = h.billingCount + 1;
      return { ...h, billingCount, disabledUntil: now + billingMs(billingCount), lastErrorReason: reason };
    }
    case 'auth':
      return { ...h, authFailed: true, lastErrorReason: reason };
    case 'request':
      return h;
  }
}

/** A success clears both schedules. */
export const afterSuccess = (): ProviderHealth => HEALTHY;

export type ProviderStatus = 'active' | 'cooldown' | 'billing_disabled' | 'expired' | 'unconfigured';

export function statusOf(h: ProviderHealth, usable: boolean, now: number): ProviderStatus {
  if (!usable) return 'unconfigured';
  if (h.disabledUntil !== null && h.disabledUntil > now) return 'billing_disabled';
  if (h.cooldownUntil !== null && h.cooldownUntil > now) return 'cooldown';
  if (h.authFailed) return 'expired';
  return 'active';
}

/** When a provider that is out of service may be called again, or null when it may be now. */
export function unavailableUntil(h: ProviderHealth, now: number): number | null {
  const until = Math.max(h.disabledUntil ?? 0, h.cooldownUntil ?? 0);
  return until > now ? until : null;
}
