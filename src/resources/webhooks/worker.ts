import type { App } from '../../app.js';
import { isPostgres } from '../../db/open.js';
import { VAULT } from '../vault/live.js';
import { errorFields } from '../../kernel/log.js';
import { nowIso } from '../../lib/time.js';
import { decide } from './outcome.js';
import { parseRetryAfter } from './retry.js';
import { claimWant, nextStart, nextWake, type Held, type SlotLimits } from './schedule.js';
import { openSecretBox, type SecretBox } from './secret-box.js';
import { disableGone, type Matcher, type WebhookRuntime } from './service.js';
import { deliveryHeaders } from './sign.js';
import * as store from './store.js';
import { errorText, type Sent } from './send.js';
import { Sender } from './sender.js';

// The delivery worker: claims due deliveries (at most webhooks.concurrency in flight, at most
// webhooks.perEndpointConcurrency of one webhook; see schedule.ts), signs them, hands them to the
// delivery thread (sender.ts: one pooled undici Agent, one hard deadline), and records every
// attempt. Deliveries live in the state DB, so what was pending or in flight when the process died
// is sent after the restart, with the same delivery id. Every time it reads is the daemon's clock.

export interface WorkerOptions {
  /** Names resolved to these addresses instead of by DNS (tests; the forbidden-address check still applies). */
  hosts?: Record<string, string>;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

interface Outcome {
  c: store.Claimed;
  attempt: store.AttemptRecord;
  status: 'pending' | 'succeeded' | 'failed';
  nextAttemptAt: number | null;
  disable: boolean;
}

/** Opened secrets are re-read at least this often (rotation also drops them at once). */
const SECRET_CACHE_MS = 60_000;
/** On a shared state, where a rotation through another daemon drops nothing here. */
const SHARED_SECRET_CACHE_MS = 1_000;
/** Finished attempts are written together at most this long after the first of them. */
const FLUSH_EVERY_MS = 10;
/** At most this many attempts per write, so one commit never holds the event loop for long. */
const FLUSH_MAX = 64;
const START_PER_TURN = 8;
/**
 * A claim's lease beyond twice the delivery timeout. A claimed delivery may wait in `ready` behind
 * one attempt of its webhook (a webhook claims at most one batch of its slots ahead), then takes at
 * most its own timeout, then up to FLUSH_EVERY_MS (plus a commit) before its attempt is written.
 */
const LEASE_MARGIN_MS = 1_000;
/**
 * On a shared state, a claimed delivery is sent only with at least this much of its lease left
 * beyond the timeout (time for the flush and its commit); one that waited too long in `ready` is
 * given back instead, so it is never on the wire after another daemon may have taken it.
 */
const LEASE_SLACK_MS = 500;
/**
 * On a shared state, every daemon looks for due deliveries at least this often: deliveries that
 * another daemon made (its own kick wakes only it), and claims whose daemon died. So a delivery is
 * sent within about a second of being made even if the daemon that made it is busy or gone.
 */
const SHARED_POLL_MS = 1_000;

/** How long a claim holds (ms): see LEASE_MARGIN_MS. */
export const leaseMs = (timeoutMs: number): number => 2 * timeoutMs + FLUSH_EVERY_MS + LEASE_MARGIN_MS;

export class DeliveryWorker implements WebhookRuntime {
  readonly matchers = new Map<string, Matcher>();
  /** The delivery thread: the network work of every attempt happens off the main thread. */
  private readonly sender: Sender;
  private readonly random: () => number;
  private readonly inFlight = new Set<Promise<void>>();
  /** Deliveries on the wire, per webhook. */
  private readonly active = new Map<string, number>();
  /** Claimed (in_flight = 1 in the DB) and not yet started; released by the next start after a crash. */
  private ready: store.Claimed[] = [];
  /** Finished attempts waiting for the next batched write. */
  private outcomes: Outcome[] = [];
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly secrets = new Map<string, { list: string[]; until: number }>();
  /** The wake-up for the next delivery not due yet, on the daemon's clock. */
  private timer: unknown = null;
  private timerAt = Infinity;
  private scheduled = false;
  private closed = false;
  /** Callers of settled(), each with the condition it waits for. */
  private waiters: { wire: boolean; resolve(): void }[] = [];
  /**
   * What may have due deliveries the worker does not know of. Every webhook's are looked up when
   * `stale` (at start, when the timer fires); otherwise only those of the webhooks named by a
   * kick (`fresh`: new deliveries, redelivery, a change) and of those it holds and has not found
   * `drained` (a claim that got fewer rows than it asked for).
   */
  private stale = true;
  private readonly fresh = new Set<string>();
  private readonly drained = new Set<string>();
  /** Several daemons share the state (PostgreSQL): claims are leased, and the worker polls. */
  private readonly shared: boolean;
  private pollTimer: NodeJS.Timeout | null = null;
  /** Claims whose attempt the shutdown cut short. */
  private readonly cutShort: store.Claimed[] = [];

  /** The pump under way (one at a time), and whether another must follow it. */
  private pumping: Promise<void> | null = null;
  private pumpAgain = false;

  private constructor(
    private readonly app: App,
    readonly box: SecretBox,
    opts: WorkerOptions,
  ) {
    this.random = opts.random ?? Math.random;
    this.sender = new Sender({ hosts: opts.hosts }, app.log);
    this.shared = isPostgres(app.db);
  }

  static async open(app: App, opts: WorkerOptions = {}): Promise<DeliveryWorker> {
    // On a shared state every daemon must open the same secrets: the box key lives in the state.
    const box = await openSecretBox(app.stateDir, app.projectId, isPostgres(app.db) ? { db: app.db, entryKey: app.services.get(VAULT).keys.entryKey } : undefined);
    const released = await store.releaseInFlight(app.db, app.clock.now());
    if (released) app.log.info('re-sending webhook deliveries that were in flight when the daemon stopped', { count: released });
    return new DeliveryWorker(app, box, opts);
  }

  /** Starts sending (after the daemon has wired everything). */
  start(): void {
    this.kick();
    if (this.shared) this.poll();
  }

  /**
   * Shared state only, on a real-time timer of its own (a fake daemon clock must not have to be
   * advanced for it, and its wake-ups stay the daemon clock's): gives back claims whose lease ran
   * out, then looks at every webhook's due deliveries. Finding none expired is a read; the write
   * (and the global write lock) is taken only when there is one to give back.
   */
  private poll(): void {
    if (this.closed) return;
    const every = Math.min(SHARED_POLL_MS, leaseMs(this.app.config().webhooks.timeoutMs) / 2);
    this.pollTimer = setTimeout(() => void this.look(), every);
    this.pollTimer.unref();
  }

  private async look(): Promise<void> {
    this.pollTimer = null;
    if (this.closed) return;
    try {
      const now = this.app.clock.now();
      if (await store.hasExpiredClaims(this.app.db, now)) {
        const n = await this.app.db.transaction(async () => await store.releaseExpiredClaims(this.app.db, now));
        if (n) this.app.log.info('re-sending webhook deliveries whose claim ran out (a daemon stopped or hung mid-delivery)', { count: n });
      }
    } catch (err) {
      this.app.log.error('releasing expired webhook claims failed; trying again on the next look', errorFields(err));
    }
    this.kick();
    this.poll();
  }

  /** Deliveries of `webhookId` (of any webhook when absent) may be due: look on the next turn. */
  kick(webhookId?: string): void {
    if (webhookId === undefined) this.stale = true;
    else this.fresh.add(webhookId);
    // Kicked from inside the writing transaction (the event sink): the look runs outside it.
    this.app.db.detach(() => this.schedule());
  }

  private schedule(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.pump();
    });
  }

  settled(opts: { wire?: boolean } = {}): Promise<void> {
    return new Promise<void>((resolve) => {
      this.waiters.push({ wire: opts.wire === true, resolve });
      // A look of its own first: a settled() right after a change sees what the change made due.
      this.kick();
    });
  }

  /** Wakes the settled() callers whose condition holds (called whenever the worker goes quiet). */
  private checkSettled(): void {
    if (!this.waiters.length) return;
    const quiet = this.closed || (!this.scheduled && !this.pumping && !this.flushTimer && !this.outcomes.length && nextStart(this.ready, this.active, this.inFlight.size, this.limits()) < 0);
    if (!quiet) return;
    const onWire = this.inFlight.size > 0 && !this.closed;
    this.waiters = this.waiters.filter((w) => {
      if (w.wire && onWire) return true;
      w.resolve();
      return false;
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
  async release(webhookId: string): Promise<void> {
    const drop = this.ready.filter((c) => c.webhookId === webhookId);
    if (!drop.length) return;
    this.ready = this.ready.filter((c) => c.webhookId !== webhookId);
    await store.releaseClaims(this.app.db, drop);
  }

  private limits(): SlotLimits {
    const { concurrency, perEndpointConcurrency } = this.app.config().webhooks;
    return { concurrency, perEndpoint: perEndpointConcurrency };
  }

  /** One look at a time: a look asked for while one runs follows it. */
  private pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return this.pumping;
    }
    const run = async () => {
      do {
        this.pumpAgain = false;
        await this.pumpOnce();
      } while (this.pumpAgain && !this.closed);
    };
    this.pumping = run().finally(() => {
      this.pumping = null;
      this.checkSettled();
    });
    return this.pumping;
  }

  private async pumpOnce(): Promise<void> {
    if (this.closed) return;
    try {
      const limits = this.limits();
      if (this.shared) await this.dropStale();
      this.startReady(limits);
      await this.claim(limits);
      this.startReady(limits);
    } catch (err) {
      this.app.log.error('claiming webhook deliveries failed; trying again in a second', errorFields(err));
      this.arm(this.app.clock.now() + 1000);
    }
  }

  /**
   * Shared state only, before claimed deliveries start: gives back those that waited in `ready` so
   * long that their lease could run out before their attempt is written, and those whose webhook
   * another daemon changed, disabled or deleted since the claim (release() covers only this
   * daemon's own changes; one read of the webhooks held covers the others'). What is given back is
   * due again at once, for any daemon, at the webhook's current URL.
   */
  private async dropStale(): Promise<void> {
    if (!this.ready.length) return;
    const cutoff = this.app.clock.now() + this.app.config().webhooks.timeoutMs + LEASE_SLACK_MS;
    const urls = await store.enabledUrls(this.app.db, [...new Set(this.ready.map((c) => c.webhookId))]);
    const keep = (c: store.Claimed) => c.claimedUntil >= cutoff && urls.get(c.webhookId) === c.url;
    const drop = this.ready.filter((c) => !keep(c));
    if (!drop.length) return;
    this.ready = this.ready.filter(keep);
    const now = nowIso(this.app.clock);
    await this.app.db.transaction(async () => {
      await store.releaseClaims(this.app.db, drop);
      // Disabling failed what was waiting except what was claimed (this): fail it as it would have.
      for (const id of new Set(drop.filter((c) => !urls.has(c.webhookId)).map((c) => c.webhookId))) {
        if ((await store.getWebhook(this.app.db, id))?.enabled === false) await store.failPending(this.app.db, id, 'webhook disabled before this delivery was made', now);
      }
    });
    for (const c of drop) this.fresh.add(c.webhookId);
  }

  /** Claims, for each webhook that may have due deliveries, what schedule.ts says it may take now. */
  private async claim(limits: SlotLimits): Promise<void> {
    const now = this.app.clock.now();
    const claimedUntil = now + leaseMs(this.app.config().webhooks.timeoutMs);
    const held = new Map<string, Held>();
    for (const [id, n] of this.active) held.set(id, { active: n, queued: 0 });
    for (const c of this.ready) {
      const h = held.get(c.webhookId);
      if (h) h.queued++;
      else held.set(c.webhookId, { active: 0, queued: 1 });
    }
    let candidates: Iterable<string>;
    if (this.stale) {
      this.stale = false;
      this.drained.clear();
      const heads = await store.dueHeads(this.app.db);
      // Deliveries not due yet wake the worker when they are.
      this.arm(nextWake(heads, now));
      candidates = heads.filter((h) => h.dueAt <= now).map((h) => h.webhookId);
    } else {
      for (const id of this.fresh) this.drained.delete(id);
      candidates = new Set([...this.fresh, ...[...held.keys()].filter((id) => !this.drained.has(id))]);
    }
    this.fresh.clear();
    const free = limits.concurrency - this.inFlight.size;
    const wants: [string, number][] = [];
    for (const id of candidates) {
      const n = claimWant(held.get(id) ?? { active: 0, queued: 0 }, free, limits);
      if (n > 0) wants.push([id, n]);
    }
    if (!wants.length) return;
    // Taken into `ready` only once committed: a claim rolled back must not be sent.
    const claimed: store.Claimed[] = [];
    await this.app.db.transaction(async () => {
      for (const [id, n] of wants) {
        const got = await store.claimDue(this.app.db, id, now, n, claimedUntil);
        claimed.push(...got);
        if (got.length < n) this.drained.add(id);
      }
    });
    this.ready.push(...claimed);
  }

  /** Starts claimed deliveries while slots allow: a few per turn of the event loop. */
  private startReady(limits: SlotLimits): void {
    // API requests wait behind at most START_PER_TURN deliveries' worth of synchronous work
    // (signing, request set-up); the rest start on the next turn.
    for (let started = 0; ; started++) {
      const i = nextStart(this.ready, this.active, this.inFlight.size, limits);
      if (i < 0) return;
      if (started === START_PER_TURN) return this.schedule();
      const [c] = this.ready.splice(i, 1) as [store.Claimed];
      this.active.set(c.webhookId, (this.active.get(c.webhookId) ?? 0) + 1);
      const p: Promise<void> = this.deliver(c)
        .catch((err) => this.app.log.error('a webhook delivery failed unexpectedly', { deliveryId: c.id, ...errorFields(err) }))
        .finally(() => {
          this.inFlight.delete(p);
          const left = (this.active.get(c.webhookId) ?? 1) - 1;
          if (left > 0) this.active.set(c.webhookId, left);
          else this.active.delete(c.webhookId);
          this.schedule();
        });
      this.inFlight.add(p);
    }
  }

  private arm(at: number | null): void {
    if (at === null || this.closed) return;
    if (this.timer !== null && this.timerAt <= at) return;
    if (this.timer !== null) this.app.clock.clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.app.clock.setTimeout(
      () => {
        this.timer = null;
        this.timerAt = Infinity;
        this.stale = true;
        return this.pump();
      },
      Math.min(MAX_TIMER_MS, Math.max(0, at - this.app.clock.now())),
    );
  }

  private async secretsFor(webhookId: string, at: string): Promise<string[]> {
    const now = Date.parse(at);
    const hit = this.secrets.get(webhookId);
    if (hit && hit.until > now) return hit.list;
    let rows;
    try {
      rows = await store.liveSecrets(this.app.db, webhookId, at);
      const list = rows.map((r) => this.box.open(r.id, r));
      // Kept until the first grace window ends (a retired secret must stop signing on time).
      const ends = rows.map((r) => (r.expiresAt ? Date.parse(r.expiresAt) : Infinity));
      // Shared state: another daemon may rotate a secret, and only its own cache hears of it.
      const keep = this.shared ? SHARED_SECRET_CACHE_MS : SECRET_CACHE_MS;
      this.secrets.set(webhookId, { list, until: Math.min(now + keep, ...ends) });
      if (this.secrets.size > 10_000) this.secrets.clear();
      return list;
    } catch (err) {
      throw new Error(`cannot open the webhook's signing secret (was .svc/webhooks.key replaced?); rotate the secret: ${(err as Error).message}`);
    }
  }

  private async deliver(c: store.Claimed): Promise<void> {
    const { timeoutMs, retryBaseMs } = this.app.config().webhooks;
    const at = nowIso(this.app.clock);
    let sent: Sent;
    let durationMs = 0;
    try {
      const secrets = await this.secretsFor(c.webhookId, at);
      const headers = deliveryHeaders({ deliveryId: c.id, event: c.event, body: c.body, secrets, t: Math.floor(Date.parse(at) / 1000) });
      ({ sent, durationMs } = await this.sender.send({ url: c.url, body: c.body, headers, timeoutMs }));
    } catch (err) {
      sent = { result: { error: errorText(err).text }, responseBody: null, retryAfter: null, location: null };
    }
    // Cut short by shutdown: not the receiver's doing, so not an attempt; the next start re-sends it
    // (on a shared state, close() gives the claim back so that another daemon sends it now).
    if (this.closed) {
      this.cutShort.push(c);
      return;
    }
    const attempts = c.attempts + 1;
    const now = this.app.clock.now();
    const retryAfterMs = parseRetryAfter(sent.retryAfter ?? undefined, now);
    const d = decide({ result: sent.result, attempts, now, retryBaseMs, random: this.random, retryAfterMs, location: sent.location });
    this.outcomes.push({
      c,
      attempt: { n: attempts, at, statusCode: d.statusCode, error: d.error, durationMs, responseBody: sent.responseBody },
      status: d.status,
      nextAttemptAt: d.nextAttemptAt,
      disable: d.disable,
    });
    await this.scheduleFlush();
  }

  private async scheduleFlush(): Promise<void> {
    if (this.outcomes.length >= FLUSH_MAX) await this.flush();
    else this.flushTimer ??= setTimeout(() => void this.flush(), FLUSH_EVERY_MS);
  }

  /**
   * Writes every attempt finished since the last flush in one transaction: a commit every few
   * milliseconds instead of one per delivery. An attempt not yet written when the process dies is
   * sent again after the restart (at-least-once, same delivery id).
   */
  private async flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (!this.outcomes.length) return this.checkSettled();
    const batch = this.outcomes.splice(0, FLUSH_MAX);
    if (this.outcomes.length) this.flushTimer = setTimeout(() => void this.flush(), 0);
    const now = nowIso(this.app.clock);
    try {
      await this.app.events.write(async () => {
        for (const o of batch) {
          const kept = await store.recordAttempt(this.app.db, o.c.id, o.attempt, { status: o.status, nextAttemptAt: o.nextAttemptAt, now });
          if (kept && o.disable) await disableGone(this.app, o.c.webhookId, o.c.url, `${o.c.url} answered 410 Gone`);
        }
      });
    } catch (err) {
      // The rows stay in flight; the next start sends them again.
      this.app.log.error('recording webhook attempts failed', { count: batch.length, ...errorFields(err) });
      return;
    }
    // Retries wake the worker when they are due.
    let retryAt: number | null = null;
    for (const o of batch) if (o.status === 'pending' && o.nextAttemptAt !== null) retryAt = Math.min(retryAt ?? Infinity, o.nextAttemptAt);
    this.arm(retryAt);
    this.checkSettled();
  }

  /** Stops claiming, lets attempts under way finish (each is bounded by its deadline), closes the pool. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) this.app.clock.clearTimeout(this.timer);
    this.timer = null;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = null;
    await this.sender.close();
    await Promise.allSettled([...this.inFlight]);
    while (this.outcomes.length) await this.flush();
    // On a shared state the other daemons take at once what this one claimed and never sent (or
    // whose attempt it cut short), not after the lease: a restarting daemon cannot tell its own old
    // claims from a live daemon's. On SQLite the next start gives everything back anyway.
    const unsent = [...this.ready.splice(0), ...this.cutShort.splice(0)];
    if (this.shared && unsent.length) {
      try {
        await this.app.db.transaction(async () => await store.releaseClaims(this.app.db, unsent));
      } catch (err) {
        this.app.log.error('giving back unsent webhook claims failed; their lease frees them', errorFields(err));
      }
    }
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.checkSettled();
  }
}
