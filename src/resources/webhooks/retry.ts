// When a failed attempt is tried again. Pure: the caller passes the random source.

/** At most this many attempts in all (the reference's "at most five"). */
export const MAX_ATTEMPTS = 5;
/** A receiver's Retry-After is honoured up to this long. */
export const RETRY_AFTER_CAP_MS = 60 * 60 * 1000;

/**
 * Exponential backoff with full jitter: after attempt n (1-based) the wait is uniform in
 * [0, retryBaseMs × 4^(n−1)]. A Retry-After from the receiver is a floor (never earlier than it
 * asked), capped at one hour.
 */
export function retryDelayMs(attempt: number, retryBaseMs: number, random: () => number, retryAfterMs?: number | null): number {
  const ceiling = retryBaseMs * 4 ** Math.max(0, attempt - 1);
  const jittered = Math.floor(random() * ceiling);
  if (retryAfterMs === undefined || retryAfterMs === null) return jittered;
  return Math.max(jittered, Math.min(Math.max(0, retryAfterMs), RETRY_AFTER_CAP_MS));
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return null;
  const t = v.trim();
  if (/^\d+$/.test(t)) return Math.min(Number(t) * 1000, RETRY_AFTER_CAP_MS);
  const at = Date.parse(t);
  if (Number.isNaN(at)) return null;
  return Math.min(Math.max(0, at - now), RETRY_AFTER_CAP_MS);
}
