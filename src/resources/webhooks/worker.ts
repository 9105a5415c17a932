import type { App } from '../../app.js';
import { errorFields } from '../../kernel/log.js';
import { nowIso } from '../../lib/time.js';
import { decide } from './outcome.js';
import { openSecretBox } from './secret-box.js';
import { disableGone, pruneDeliveries, type Matcher, type WebhookRuntime } from './service.js';
import { deliveryHeaders } from './sign.js';
import * as store from './store.js';
import { errorText, type Sent } from './send.js';
import { Sender } from './sender.js';

// The delivery worker: claims due deliveries (at most webhooks.concurrency in flight), signs them,
// hands them to the delivery thread (sender.ts: one pooled undici Agent, one hard deadline), and
// records every attempt. Deliveries live in the state DB, so what was pending or in flight when the
// process died is sent after the restart, with the same delivery id.

export interface WorkerOptions {
  /** Names resolved to these addresses instead of by DNS (tests; the forbidden-address check still applies). */
  hosts?: Record<string, string>;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
}

const PRUNE_EVERY_MS = 60 * 60 * 1000;
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Outcome {
  c: store.Claimed;
  attempt: store.AttemptRecord;
  status: 'pending' | 'succeeded' | 'failed';
  nextAttemptAt: number | null;
  disable: boolean;
}

/** Claimed rows kept ready beyond the free slots, so claiming is one transaction per batch, not per delivery. */
const PREFETCH_FACTOR = 2;
/** Opened secrets are re-read at least this often (rotation also drops them at once). */
const SECRET_CACHE_MS = 60_000;
/** Finished attempts are written together at most this long after the first of them. */
const FLUSH_EVERY_MS = 10;
/** At most this many attempts per write, so one commit never holds the event loop for long. */
const FLUSH_MAX = 64;
const START_PER_TURN = 8;

export class DeliveryWorker implements WebhookRuntime {
  readonly box;
  readonly matchers = new Map<string, Matcher>();
  /** The delivery thread: the network work of every attempt happens off the main thread. */
  private readonly sender: Sender;
  private readonly random: () => number;
  private readonly inFlight = new Set<Promise<void>>();
  /** Claimed (in_flight = 1 in the DB) and not yet started; released by the next start after a crash. */
  private ready: store.Claimed[] = [];
  /** Finished attempts waiting for the next batched write. */
  private outcomes: Outcome[] = [];
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly secrets = new Map<string, { list: string[]; until: number }>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private scheduled = false;
  private closed = false;
  private readonly pruneTimer: NodeJS.Timeout;

  constructor(
    private readonly app: App,
    opts: WorkerOptions = {},
  ) {
    this.box = openSecretBox(app.stateDir, app.projectId);
    this.random = opts.random ?? Math.random;
    this.sender = new Sender({ hosts: opts.hosts }, app.log);
    const released = store.releaseInFlight(app.db, Date.now());
    if (released) app.log.info('re-sending webhook deliveries that were in flight when the daemon stopped', { count: released });
    this.prune();
    this.pruneTimer = setInterval(() => this.prune(), PRUNE_EVERY_MS);
    this.pruneTimer.unref();
  }

  /** Starts sending (after the daemon has wired everything). */
  start(): void {
    this.kick();
  }

  kick(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  secretsChanged(webhookId: string): void {
    this.secrets.delete(webhookId);
  }

  /**
   * Gives back the claimed deliveries of a webhook that are not on the wire yet (it was changed,
   * disabled or deleted): they must not go to an old URL or to a webhook that no longer wants them.
   * Runs inside the caller's transaction.
   */
  release(webhookId: string): void {
    const drop = this.ready.filter((c) => c.webhookId === webhookId);
    if (!drop.length) return;
    this.ready = this.ready.filter((c) => c.webhookId !== webhookId);
    store.releaseClaims(this.app.db, drop.map((c) => c.id));
  }

  private prune(): void {
    try {
      const n = pruneDeliveries(this.app);
      if (n) this.app.log.info('pruned webhook deliveries older than 30 days', { count: n });
    } catch (err) {
      this.app.log.error('pruning webhook deliveries failed', errorFields(err));
    }
  }

  private pump(): void {
    if (this.closed) return;
    try {
      const { concurrency } = this.app.config().webhooks;
      // Claim in batches of at least `concurrency` rows (always possible once `ready` is empty).
      const want = concurrency * PREFETCH_FACTOR - this.ready.length - this.inFlight.size;
      if (want >= concurrency) this.ready.push(...this.app.db.transaction(() => store.claimDue(this.app.db, Date.now(), want))());
      // A few starts per turn of the event loop, then yield: API requests wait behind at most
      // START_PER_TURN deliveries' worth of synchronous work (signing, request set-up).
      let started = 0;
      while (this.inFlight.size < concurrency && this.ready.length) {
        if (started++ === START_PER_TURN) {
          this.kick();
          break;
        }
        const c = this.ready.shift()!;
        const p: Promise<void> = this.deliver(c)
          .catch((err) => this.app.log.error('a webhook delivery failed unexpectedly', { deliveryId: c.id, ...errorFields(err) }))
          .finally(() => {
            this.inFlight.delete(p);
            this.kick();
          });
        this.inFlight.add(p);
      }
      if (this.inFlight.size < concurrency && !this.ready.length) this.arm(store.nextDueAt(this.app.db));
    } catch (err) {
      this.app.log.error('claiming webhook deliveries failed; trying again in a second', errorFields(err));
      this.arm(Date.now() + 1000);
    }
  }

  private arm(at: number | null): void {
    if (at === null) return;
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = Infinity;
      this.pump();
    }, Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())));
  }

  private secretsFor(webhookId: string, at: string): string[] {
    const now = Date.parse(at);
    const hit = this.secrets.get(webhookId);
    if (hit && hit.until > now) return hit.list;
    let rows;
    try {
      rows = store.liveSecrets(this.app.db, webhookId, at);
      const list = rows.map((r) => this.box.open(r.id, r));
      // Kept until the first grace window ends (a retired secret must stop signing on time).
      const ends = rows.map((r) => (r.expiresAt ? Date.parse(r.expiresAt) : Infinity));
      this.secrets.set(webhookId, { list, until: Math.min(now + SECRET_CACHE_MS, ...ends) });
      if (this.secrets.size > 10_000) this.secrets.clear();
      return list;
    } catch (err) {
      throw new Error(`cannot open the webhook's signing secret (was .svc/webhooks.key replaced?); rotate the secret: ${(err as Error).message}`);
    }
  }

  private async deliver(c: store.Claimed): Promise<void> {
    const { timeoutMs, retryBaseMs } = this.app.config().webhooks;
    const at = nowIso();
    let sent: Sent;
    let durationMs = 0;
    try {
      const secrets = this.secretsFor(c.webhookId, at);
      const headers = deliveryHeaders({ deliveryId: c.id, event: c.event, body: c.body, secrets, t: Math.floor(Date.parse(at) / 1000) });
      ({ sent, durationMs } = await this.sender.send({ url: c.url, body: c.body, headers, timeoutMs }));
    } catch (err) {
      sent = { result: { error: errorText(err).text }, responseBody: null, retryAfterMs: null, location: null };
    }
    // Cut short by shutdown: not the receiver's doing, so not an attempt; the next start re-sends it.
    if (this.closed) return;
    const attempts = c.attempts + 1;
    const d = decide({ result: sent.result, attempts, now: Date.now(), retryBaseMs, random: this.random, retryAfterMs: sent.retryAfterMs, location: sent.location });
    this.outcomes.push({
      c,
      attempt: { n: attempts, at, statusCode: d.statusCode, error: d.error, durationMs, responseBody: sent.responseBody },
      status: d.status,
      nextAttemptAt: d.nextAttemptAt,
      disable: d.disable,
    });
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.outcomes.length >= FLUSH_MAX) this.flush();
    else this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_EVERY_MS);
  }

  /**
   * Writes every attempt finished since the last flush in one transaction: a commit every few
   * milliseconds instead of one per delivery. An attempt not yet written when the process dies is
   * sent again after the restart (at-least-once, same delivery id).
   */
  private flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (!this.outcomes.length) return;
    const batch = this.outcomes.splice(0, FLUSH_MAX);
    if (this.outcomes.length) this.flushTimer = setTimeout(() => this.flush(), 0);
    const now = nowIso();
    try {
      this.app.events.write(() => {
        for (const o of batch) {
          const kept = store.recordAttempt(this.app.db, o.c.id, o.attempt, { status: o.status, nextAttemptAt: o.nextAttemptAt, now });
          if (kept && o.disable) disableGone(this.app, o.c.webhookId, o.c.url, `${o.c.url} answered 410 Gone`);
        }
      });
    } catch (err) {
      // The rows stay in flight; the next start sends them again.
      this.app.log.error('recording webhook attempts failed', { count: batch.length, ...errorFields(err) });
    }
    if (batch.some((o) => o.status === 'pending')) this.kick();
  }

  /** Stops claiming, lets attempts under way finish (each is bounded by its deadline), closes the pool. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.pruneTimer);
    if (this.timer) clearTimeout(this.timer);
    await this.sender.close();
    await Promise.allSettled([...this.inFlight]);
    while (this.outcomes.length) this.flush();
    if (this.flushTimer) clearTimeout(this.flushTimer);
  }
}
