import type { lookup as dnsLookup, LookupAddress } from 'node:dns';
import type { AttemptResult } from './outcome.js';
import { literalHost, refusalText } from './target.js';

// What the delivery thread (send-thread.ts, post.ts) and the daemon's worker share about a
// delivery on the wire: the guarded name lookup, the refusal of forbidden literal addresses, the
// error text of a failed attempt and the messages between the two. undici is the thread's alone.

export type LookupFn = typeof dnsLookup;

class RefusedTarget extends Error {
  readonly code = 'ESVC_REFUSED_TARGET';
}

/** Wraps a resolver so that a name resolving to a forbidden address fails to connect. */
export function guardedLookup(base: LookupFn): LookupFn {
  const guarded = (hostname: string, options: unknown, callback: unknown) => {
    const cb = (typeof options === 'function' ? options : callback) as (err: Error | null, address?: string | LookupAddress[], family?: number) => void;
    const opts = typeof options === 'function' ? {} : (options as object);
    (base as unknown as (h: string, o: object, c: typeof cb) => void)(hostname, opts, (err, address, family) => {
      if (err) return cb(err);
      const list = Array.isArray(address) ? address.map((a) => a.address) : [address as string];
      for (const a of list) {
        const why = refusalText(a);
        if (why) return cb(new RefusedTarget(`refused: ${hostname} resolves to ${a}, ${why}`));
      }
      cb(null, address, family);
    });
  };
  return guarded as unknown as LookupFn;
}

export function errorText(err: unknown): { text: string; refused: boolean } {
  let e = err as (Error & { code?: string; cause?: unknown }) | undefined;
  for (let depth = 0; e && depth < 4; depth++) {
    if (e instanceof RefusedTarget || e.code === 'ESVC_REFUSED_TARGET') return { text: e.message, refused: true };
    if (!e.cause) break;
    e = e.cause as typeof e;
  }
  const top = err as Error & { code?: string };
  return { text: [top?.code, top?.message].filter(Boolean).join(': ') || String(err), refused: false };
}

export interface Sent {
  result: AttemptResult;
  responseBody: string | null;
  /** The answer's Retry-After as sent; the daemon reads it against its own clock. */
  retryAfter: string | null;
  location: string | null;
}

/**
 * A literal address in the URL is connected to without a name lookup, so the lookup's check never
 * sees it: it is checked here (a URL stored before a rule was added is refused all the same).
 */
export function refusedLiteral(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  const lit = literalHost(u);
  const why = lit ? refusalText(lit) : null;
  return why ? `refused: ${lit} is ${why}` : null;
}

/** A resolver answering the names of `hosts` itself and asking `base` for the rest (tests). */
export function hostsLookup(hosts: Record<string, string>, base: LookupFn): LookupFn {
  const lookup = (hostname: string, options: unknown, callback: unknown) => {
    const cb = (typeof options === 'function' ? options : callback) as (err: Error | null, address?: string | LookupAddress[], family?: number) => void;
    const opts = (typeof options === 'function' ? {} : options) as { all?: boolean };
    const answer = Object.hasOwn(hosts, hostname) ? hosts[hostname]! : null;
    if (answer === null) return (base as unknown as (h: string, o: object, c: typeof cb) => void)(hostname, opts, cb);
    const family = answer.includes(':') ? 6 : 4;
    if (opts.all) cb(null, [{ address: answer, family }]);
    else cb(null, answer, family);
  };
  return lookup as unknown as LookupFn;
}

/** What the daemon sends the delivery thread, and what comes back. */
export interface ThreadRequest {
  id: number;
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
}
export interface ThreadResult {
  id: number;
  sent: Sent;
  durationMs: number;
}

export interface Post {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Aborts the attempt from outside; reported as such, not as the deadline. */
  signal?: AbortSignal;
}
