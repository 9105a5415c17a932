import type { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { request, type Agent } from 'undici';
import type { AttemptResult } from './outcome.js';
import { literalHost, refusalText } from './target.js';

// One delivery on the wire: a POST under one hard deadline that covers connecting, the answer's
// headers and its body, through a pooled Agent whose name lookup refuses forbidden addresses.
// Redirects are never followed (undici's request() follows none without an interceptor).

export type LookupFn = typeof dnsLookup;

const RESPONSE_KEEP_BYTES = 1024;
/** A response body is read this far (to reuse the connection), then the connection is dropped. */
const RESPONSE_READ_BYTES = 64 * 1024;

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

export async function postDelivery(agent: Agent, p: Post): Promise<Sent> {
  const refused = refusedLiteral(p.url);
  if (refused) return { result: { error: refused, refused: true }, responseBody: null, retryAfter: null, location: null };
  const ac = new AbortController();
  const deadline = setTimeout(() => ac.abort(), p.timeoutMs);
  const stop = () => ac.abort();
  p.signal?.addEventListener('abort', stop, { once: true });
  try {
    const res = await request(p.url, { method: 'POST', headers: p.headers, body: p.body, dispatcher: agent, signal: ac.signal, headersTimeout: p.timeoutMs, bodyTimeout: p.timeoutMs });
    const chunks: Buffer[] = [];
    let read = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      if (read < RESPONSE_KEEP_BYTES) chunks.push(chunk.subarray(0, RESPONSE_KEEP_BYTES - read));
      read += chunk.length;
      if (read >= RESPONSE_READ_BYTES) {
        res.body.destroy();
        break;
      }
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const location = res.headers.location;
    const retryAfter = Array.isArray(res.headers['retry-after']) ? res.headers['retry-after'][0] : res.headers['retry-after'];
    return {
      result: { statusCode: res.statusCode },
      responseBody: text || null,
      retryAfter: typeof retryAfter === 'string' ? retryAfter.slice(0, 128) : null,
      location: typeof location === 'string' ? location.slice(0, 512) : null,
    };
  } catch (err) {
    if (ac.signal.aborted) {
      return { result: { error: p.signal?.aborted ? 'cut short by shutdown' : `no complete answer within ${p.timeoutMs} ms` }, responseBody: null, retryAfter: null, location: null };
    }
    const { text, refused } = errorText(err);
    return { result: { error: text, refused }, responseBody: null, retryAfter: null, location: null };
  } finally {
    clearTimeout(deadline);
    p.signal?.removeEventListener('abort', stop);
  }
}
