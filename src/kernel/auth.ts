import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export type GrantAction = 'read' | 'write' | 'manage';

export interface Grant {
  resource: string;
  tables?: string[];
  actions: GrantAction[];
}

/** A configured key, held only as its SHA-256 digest. */
export interface KeyEntry {
  name: string;
  digest: Buffer;
  /** undefined = full access; an array = deny by default, allow what the grants name. */
  grants?: Grant[];
  source: 'project.json' | 'SERVICE_API_KEY' | 'local.key';
}

/** Who made a request: the key that matched, never the key itself. */
export interface Principal {
  name: string;
  /** Hex digest of the key; identifies a key's open streams so they can be closed when it is removed. */
  keyId: string;
  grants?: Grant[];
  source: KeyEntry['source'];
}

export function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Digests of keys that recently authenticated, so a client sending the same key on every request
 * is not hashed every time. Only keys that matched are remembered (a flood of wrong keys cannot
 * fill or churn it); it is bounded and starts over when full. One per HTTP server, never shared.
 */
export class DigestCache {
  private readonly map = new Map<string, Buffer>();

  constructor(private readonly max = 64) {}

  digest(presented: string): Buffer {
    return this.map.get(presented) ?? sha256(presented);
  }

  remember(presented: string, digest: Buffer): void {
    if (this.map.has(presented)) return;
    if (this.map.size >= this.max) this.map.clear();
    this.map.set(presented, digest);
  }
}

/** Reads `Authorization: Bearer <key>`; a key anywhere else (query string, other schemes) is ignored. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

/**
 * Finds the key entry whose digest equals the presented key's digest. Every entry is compared,
 * match or not, with a constant-time comparison over fixed-length digests, so timing tells
 * nothing about how close a guess was or which entry matched.
 */
export function authenticate(keys: readonly KeyEntry[], presented: string | undefined, cache?: DigestCache): Principal | null {
  if (presented === undefined) return null;
  const digest = cache ? cache.digest(presented) : sha256(presented);
  let found: KeyEntry | null = null;
  for (const entry of keys) {
    if (timingSafeEqual(entry.digest, digest) && found === null) found = entry;
  }
  if (!found) return null;
  cache?.remember(presented, digest);
  return { name: found.name, keyId: found.digest.toString('hex'), grants: found.grants, source: found.source };
}

/**
 * Counts failed authentications per client address in a sliding minute. Past the limit the
 * client's failures are answered 429 instead of 401. Keys are 256-bit random values, so the limit
 * is there to slow noisy or scripted guessing and keep logs readable; a request with a valid key
 * from the same address still passes, so one misconfigured local tool cannot lock out the CLI.
 */
export class FailureLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly limit = 20,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records one failure; returns the seconds to wait when the client is over the limit, else 0. */
  fail(client: string): number {
    const t = this.now();
    const list = (this.failures.get(client) ?? []).filter((x) => t - x < this.windowMs);
    list.push(t);
    this.failures.set(client, list);
    if (this.failures.size > 10_000) this.sweep(t);
    if (list.length <= this.limit) return 0;
    return Math.max(1, Math.ceil((list[0]! + this.windowMs - t) / 1000));
  }

  private sweep(t: number): void {
    for (const [k, v] of this.failures) if (v.every((x) => t - x >= this.windowMs)) this.failures.delete(k);
  }
}
