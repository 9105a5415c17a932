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
  /**
   * A usage limit of an agent's CLI paused the provider's runs until then (its cooldownUntil holds
   * them); kept until the runners have said the pause is over (runner:resumed), then null.
   */
  pausedUntil: number | null;
}

export const HEALTHY: ProviderHealth = { errorCount: 0, billingCount: 0, cooldownUntil: null, disabledUntil: null, authFailed: false, lastErrorReason: null, pausedUntil: null };

export type Failure = 'transient' | 'billing' | 'auth' | 'request';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const COOLDOWN_STEPS_MIN = [1, 5, 25, 60];

/**
 * Consecutive transient failures, each of a different request, before a provider cools down. One
 * failed request says little about the provider (an upstream can answer 500 to one body and 200 to
 * the next), and a client that retries it at once must reach the upstream again rather than be
 * told to wait a minute; three different requests failing in a row, with no success between, is
 * the provider.
 */
export const FAILURES_BEFORE_COOLDOWN = 3;

/** The longest an upstream's own Retry-After keeps a provider out. */
export const RETRY_AFTER_MAX_MS = 60 * MINUTE;

/**
 * How long the `consecutive`-th counted transient failure cools the provider down: nothing before
 * FAILURES_BEFORE_COOLDOWN, then 1, 5, 25 and 60 minutes (DESIGN's schedule, from there on).
 */
export function cooldownMs(consecutive: number): number {
  if (consecutive < FAILURES_BEFORE_COOLDOWN) return 0;
  const i = Math.min(consecutive - FAILURES_BEFORE_COOLDOWN, COOLDOWN_STEPS_MIN.length - 1);
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

export interface FailureFacts {
  /**
   * False when the same request failed before (a client's retry, or a request that fails on every
   * provider it is sent to): the request's doing, not the provider's, so it is not counted.
   */
  counted?: boolean;
  /** The upstream's own Retry-After: it is not called again before then (up to RETRY_AFTER_MAX_MS). */
  retryAfterMs?: number | null;
}

export function afterFailure(h: ProviderHealth, failure: Failure, reason: string, now: number, facts: FailureFacts = {}): ProviderHealth {
  switch (failure) {
    case 'transient': {
      const errorCount = facts.counted === false ? h.errorCount : h.errorCount + 1;
      const scheduled = facts.counted === false ? 0 : cooldownMs(errorCount);
      const asked = facts.retryAfterMs ? Math.min(facts.retryAfterMs, RETRY_AFTER_MAX_MS) : 0;
      const until = Math.max(h.cooldownUntil ?? 0, scheduled ? now + scheduled : 0, asked ? now + asked : 0);
      return { ...h, errorCount, cooldownUntil: until > 0 ? until : null, lastErrorReason: reason };
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

/** The shortest and longest pause a usage limit makes: a reset already past, or years ahead, is not believed. */
export const USAGE_LIMIT_MIN_MS = MINUTE;
export const USAGE_LIMIT_MAX_MS = 7 * 24 * HOUR;

/**
 * A usage limit an agent's CLI ran into (Claude Code's rejected rate_limit_event or a 429, Codex's
 * usage-limit errors): the provider's runs pause until its reset when the CLI said one, else for the
 * provider's own backoff, counted as if enough failures had come to cool it down (1, 5, 25, then
 * 60 minutes for each limit in a row without a success). The reset is held between a minute and
 * a week from now.
 */
export function afterUsageLimit(h: ProviderHealth, reason: string, now: number, resetsAt: number | null): ProviderHealth {
  const errorCount = h.errorCount + 1;
  // The first limit takes the schedule's first step: a CLI gives up only after its own retries.
  const wanted = resetsAt ?? now + cooldownMs(errorCount + FAILURES_BEFORE_COOLDOWN - 1);
  const until = Math.min(Math.max(wanted, now + USAGE_LIMIT_MIN_MS), now + USAGE_LIMIT_MAX_MS);
  return { ...h, errorCount, cooldownUntil: Math.max(h.cooldownUntil ?? 0, until), pausedUntil: Math.max(h.pausedUntil ?? 0, until), lastErrorReason: reason };
}

/**
 * A success clears both schedules, but not a pause of the provider's runs: a chat answered with
 * an API key says nothing of the subscription a CLI ran out of. A pause not yet said to be over
 * stays so that the runners say it.
 */
export function afterSuccess(h: ProviderHealth = HEALTHY, now = 0): ProviderHealth {
  if (h.pausedUntil === null) return HEALTHY;
  const on = h.pausedUntil > now;
  return { ...HEALTHY, pausedUntil: h.pausedUntil, cooldownUntil: on ? h.cooldownUntil : null, lastErrorReason: on ? h.lastErrorReason : null };
}

export type ProviderStatus = 'active' | 'cooldown' | 'billing_disabled' | 'expired' | 'unconfigured';

export function statusOf(h: ProviderHealth, usable: boolean, now: number): ProviderStatus {
  // A CLI logs in on its own: its provider's runs may be paused though the daemon has no key for it.
  if (!usable && !(h.pausedUntil !== null && h.pausedUntil > now && h.cooldownUntil !== null && h.cooldownUntil > now)) return 'unconfigured';
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
