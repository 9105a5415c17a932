import { serviceKey } from '../../app.js';

// Which requests failed lately, and where: what tells a provider's failure from a request's. A
// client retrying the request that just failed, or the same request failing on the next provider
// that serves its model, is one failure of that request, not one more of each provider's. Kept in
// memory, per daemon (a retry comes back to the daemon it failed on), bounded in size and age.

const MINUTE = 60_000;

export class RecentFailures {
  /** Request key → when it last failed and on which providers; oldest first (a Map keeps order). */
  private readonly byRequest = new Map<string, { at: number; providers: Set<string> }>();

  constructor(
    private readonly ttlMs = 10 * MINUTE,
    private readonly max = 1000,
  ) {}

  /** Records that `request` failed on `provider`; answers where it had failed within ttlMs before. */
  record(request: string, provider: string, now: number): ReadonlySet<string> {
    const seen = this.byRequest.get(request);
    const before = seen && now - seen.at <= this.ttlMs ? seen.providers : new Set<string>();
    this.byRequest.delete(request); // re-inserted last: the newest
    this.byRequest.set(request, { at: now, providers: new Set([...before, provider]) });
    for (const [key, entry] of this.byRequest) {
      if (this.byRequest.size <= this.max && now - entry.at <= this.ttlMs) break;
      this.byRequest.delete(key);
    }
    return before;
  }
}

export const RECENT_FAILURES = serviceKey<RecentFailures>('providers.recentFailures');
