import { MAX_ATTEMPTS, retryDelayMs } from './retry.js';

// What an attempt's result means for the delivery. Pure, and exactly the reference's rules.

export type Verdict =
  /** 2xx: delivered. */
  | 'success'
  /** Network error, the deadline, 408, 429, 5xx, or a 3xx (redirects are never followed): try again. */
  | 'retry'
  /** 410 Gone: the receiver is gone for good; the webhook is disabled. */
  | 'disable'
  /** Any other 4xx, or a target refused by policy: fail now, no more attempts. */
  | 'fail';

export type AttemptResult = { statusCode: number } | { error: string; refused?: boolean };

export function classify(r: AttemptResult): Verdict {
  if (!('statusCode' in r)) return r.refused ? 'fail' : 'retry';
  const s = r.statusCode;
  if (s >= 200 && s < 300) return 'success';
  if (s === 410) return 'disable';
  if (s === 408 || s === 429 || s >= 500) return 'retry';
  // A redirect is not followed (it could lead anywhere, and the signature names no target), but
  // the receiver may be moving: retrying gives its owner time to update the URL.
  if (s >= 300 && s < 400) return 'retry';
  if (s >= 400 && s < 500) return 'fail';
  // 1xx cannot be final; anything else is not a success.
  return 'retry';
}

/** The delivery's next step after an attempt: retried only while attempts remain. */
export function nextStep(verdict: Verdict, attempts: number, maxAttempts: number): 'succeeded' | 'retry' | 'failed' | 'disable' {
  if (verdict === 'success') return 'succeeded';
  if (verdict === 'disable') return 'disable';
  if (verdict === 'retry' && attempts < maxAttempts) return 'retry';
  return 'failed';
}

export interface Decision {
  status: 'pending' | 'succeeded' | 'failed';
  /** Epoch ms of the next attempt; null unless retried. */
  nextAttemptAt: number | null;
  statusCode: number | null;
  /** What the attempt log says went wrong; null on success. */
  error: string | null;
  /** 410 Gone: the webhook is to be disabled. */
  disable: boolean;
}

/**
 * Everything an attempt's result decides, at time `now`: the delivery's new status, when it is
 * tried again (the schedule of retry.ts), and the error recorded on the attempt.
 */
export function decide(o: { result: AttemptResult; attempts: number; now: number; retryBaseMs: number; random: () => number; retryAfterMs?: number | null; location?: string | null }): Decision {
  const verdict = classify(o.result);
  const step = nextStep(verdict, o.attempts, MAX_ATTEMPTS);
  const statusCode = 'statusCode' in o.result ? o.result.statusCode : null;
  let error = 'error' in o.result ? o.result.error : null;
  if (statusCode !== null && verdict !== 'success') {
    error =
      statusCode >= 300 && statusCode < 400
        ? `redirect (${statusCode}${o.location ? ` to ${o.location}` : ''}) not followed`
        : statusCode === 410
          ? 'HTTP 410 Gone: the webhook was disabled'
          : `HTTP ${statusCode}`;
  }
  return {
    status: step === 'succeeded' ? 'succeeded' : step === 'retry' ? 'pending' : 'failed',
    nextAttemptAt: step === 'retry' ? o.now + retryDelayMs(o.attempts, o.retryBaseMs, o.random, o.retryAfterMs) : null,
    statusCode,
    error,
    disable: step === 'disable',
  };
}
