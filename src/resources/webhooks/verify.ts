import { createHmac, timingSafeEqual } from 'node:crypto';
import { systemClock } from '../../lib/clock.js';

// The receiver's side, exported from the package: checks an X-Service-Signature header. It has no
// dependency on the daemon, so a receiver can import it alone.

export interface VerifyOptions {
  /** Largest accepted distance between the signature's time and now, in seconds (default 300). */
  toleranceSec?: number;
  /** Now, in Unix seconds (tests; default the clock). */
  nowSec?: number;
}

/**
 * True when `signatureHeader` (`t=<unix>,v1=<hex>[,v1=<hex>…]`) carries a valid HMAC-SHA256 of
 * "<t>.<rawBody>" keyed with `secret` (the string exactly as the create answer returned it), and
 * `t` is within the tolerance of now, in the past or the future. Any one matching v1 is enough (a
 * rotation sends one per live secret). Comparisons are timing-safe. Pass the raw body bytes as
 * received: a re-serialised JSON body will not match.
 */
export function verifyWebhook(rawBody: string | Buffer | Uint8Array, signatureHeader: string | null | undefined, secret: string, options: VerifyOptions = {}): boolean {
  if (typeof signatureHeader !== 'string' || typeof secret !== 'string' || !secret) return false;
  const tolerance = options.toleranceSec ?? 300;
  let t: number | null = null;
  const candidates: Buffer[] = [];
  for (const part of signatureHeader.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const k = part.slice(0, eq).trim();
    const v = part.slice(eq + 1).trim();
    if (k === 't' && /^\d{1,12}$/.test(v)) t = Number(v);
    else if (k === 'v1' && /^[0-9a-f]{64}$/i.test(v)) candidates.push(Buffer.from(v, 'hex'));
  }
  if (t === null || !candidates.length) return false;
  const now = options.nowSec ?? Math.floor(systemClock.now() / 1000);
  if (Math.abs(now - t) > tolerance) return false;
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  const expected = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
  let ok = false;
  // Every candidate is compared (no early exit), so timing says nothing about which one matched.
  for (const c of candidates) ok = timingSafeEqual(c, expected) || ok;
  return ok;
}
