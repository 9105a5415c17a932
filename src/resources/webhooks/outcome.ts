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
