import { createHash, timingSafeEqual } from 'node:crypto';

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
  /** 'read': only read-only agent tools over MCP; undefined or 'all': every tool. */
  tools?: 'read' | 'all';
  /** run: minted for one run of an agent's CLI, refused once the run ends (resources/runs/keys.ts). */
  source: 'project.json' | 'SERVICE_API_KEY' | 'local.key' | 'run';
  /** The run a `run` key was minted for: what its CLI asks (a permission) is that run's. */
  runId?: string;
}

/** Who made a request: the key that matched, never the key itself. */
export interface Principal {
  name: string;
  /** Hex digest of the key; identifies a key's open streams so they can be closed when it is removed. */
  keyId: string;
  grants?: Grant[];
  tools?: KeyEntry['tools'];
  source: KeyEntry['source'];
  /** The run whose key this is (source 'run'). */
  runId?: string;
  /** Signed in through the board's session cookie rather than a bearer key (the key is the one that minted it). */
  session?: boolean;
  /** When that board session ends (epoch ms): what it opened (an event stream) ends with it. */
  sessionEndsAt?: number;
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

  /** The digest remembered for `presented`, if any. */
  known(presented: string): Buffer | undefined {
    return this.map.get(presented);
  }

  remember(presented: string, digest: Buffer): void {
    if (this.map.has(presented)) return;
    if (this.map.size >= this.max) this.map.clear();
    this.map.set(presented, digest);
  }
}

/** The key of an Authorization header's `Bearer <key>`; a key anywhere else (query string, other schemes) is ignored. */
function tokenOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

/**
 * The key entry whose digest is `digest`. Every entry is compared, match or not, with a
 * constant-time comparison over fixed-length digests, so timing tells nothing about how close a
 * guess was or which entry matched.
 */
export function keyByDigest(keys: readonly KeyEntry[], digest: Buffer): KeyEntry | null {
  let found: KeyEntry | null = null;
  for (const entry of keys) {
    if (entry.digest.length === digest.length && timingSafeEqual(entry.digest, digest) && found === null) found = entry;
  }
  return found;
}

/** Who a request is when it authenticated with `entry`. */
export const principalOf = (entry: KeyEntry): Principal => ({
  name: entry.name,
  keyId: entry.digest.toString('hex'),
  grants: entry.grants,
  tools: entry.tools,
  source: entry.source,
  ...(entry.runId !== undefined ? { runId: entry.runId } : {}),
});

/**
 * Each key entry's principal, made once: nothing changes a principal, and a request of a known key
 * then costs no hex digest and no object. Entries are made anew at each reload, which starts over.
 */
const principals = new WeakMap<KeyEntry, Principal>();

/** The principal of the presented key, or null when no configured key is it. */
export function authenticate(keys: readonly KeyEntry[], presented: string | undefined, cache?: DigestCache): Principal | null {
  if (presented === undefined) return null;
  const digest = cache ? cache.digest(presented) : sha256(presented);
  const found = keyByDigest(keys, digest);
  if (!found) return null;
  cache?.remember(presented, digest);
  return principalFor(found);
}

/**
 * authenticate() for an Authorization header as sent (`Bearer <key>`): a header whose key matched
 * before is found whole in the cache, not parsed again (the request path's way). Every key entry
 * is still compared, in constant time, on every call: a removed key stops matching at once.
 */
export function authenticateHeader(keys: readonly KeyEntry[], header: string | undefined, cache: DigestCache): Principal | null {
  if (!header) return null;
  let digest = cache.known(header);
  if (!digest) {
    const token = tokenOf(header);
    if (token === undefined) return null;
    digest = sha256(token);
  }
  const found = keyByDigest(keys, digest);
  if (!found) return null;
  cache.remember(header, digest);
  return principalFor(found);
}

function principalFor(found: KeyEntry): Principal {
  let principal = principals.get(found);
  if (!principal) principals.set(found, (principal = Object.freeze(principalOf(found))));
  return principal;
}

/**
 * The client a failed authentication is charged to. Every loopback address (127.0.0.0/8, ::1 and
 * their IPv4-mapped forms) is one client: any local process can bind any of them, so counting them
 * apart would hand a guesser 16 million allowances. An IPv6 client is its /64, the block one host
 * is usually given.
 */
export function clientOf(address: string | undefined): string {
  if (!address) return 'unknown';
  let a = address.toLowerCase();
  if (a.startsWith('::ffff:') && a.includes('.')) a = a.slice(7);
  if (a === '::1' || a.startsWith('127.')) return 'loopback';
  if (!a.includes(':')) return a;
  const [head = '', tail = ''] = a.split('::');
  const left = head ? head.split(':') : [];
  const right = a.includes('::') && tail ? tail.split(':') : [];
  const groups = a.includes('::') ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return (
    groups
      .slice(0, 4)
      .map((g) => g.replace(/^0+(?=.)/, ''))
      .join(':') + '::/64'
  );
}

/**
 * Slows repeated failed authentications: each client has a bucket of `limit` failures that refills
 * at `limit` per `windowMs` (20 a minute: a burst of 20, then one every 3 s). A failure with an
 * empty bucket is answered 429 with the seconds until the next one is allowed; it does not drain
 * the bucket further, so a client that honours Retry-After is never locked out for longer.
 * Keys are 256-bit random values, so this is there to slow noisy or scripted guessing and keep
 * logs readable; a request with a valid key is never counted, so one misconfigured local tool
 * cannot lock out the CLI.
 *
 * O(1) per failure, and bounded: at most `maxClients` buckets, the least recently failing
 * forgotten first (a Map keeps insertion order; a failing client is moved to its end).
 */
export class FailureLimiter {
  /**
   * Per client, the time at which its bucket will be full again (GCRA's "theoretical arrival
   * time"): one number, integer arithmetic, no list of past failures to rescan.
   */
  private readonly fullAt = new Map<string, number>();

  constructor(
    /** The daemon's clock (a test's fake one): a client's wait is a rule the tests check. */
    private readonly now: () => number,
    private readonly limit = 20,
    private readonly windowMs = 60_000,
    private readonly maxClients = 10_000,
  ) {}

  /** Clients with a bucket now. */
  get size(): number {
    return this.fullAt.size;
  }

  /** Records one failure from `address`; returns the seconds to wait when its client is over the limit, else 0. */
  fail(address: string | undefined): number {
    const client = clientOf(address);
    const t = this.now();
    const perFailure = this.windowMs / this.limit;
    const fullAt = Math.max(this.fullAt.get(client) ?? t, t);
    // Moved to the end of the Map, whose first entry is then the least recently failing client.
    this.fullAt.delete(client);
    if (this.fullAt.size >= this.maxClients) this.fullAt.delete(this.fullAt.keys().next().value!);
    const over = fullAt + perFailure - t - this.windowMs;
    if (over > 0) {
      // Over the limit: answered 429, and not counted, so waiting Retry-After is always enough.
      this.fullAt.set(client, fullAt);
      return Math.max(1, Math.ceil(over / 1000));
    }
    this.fullAt.set(client, fullAt + perFailure);
    return 0;
  }
}
