import { serviceKey, type App } from '../../app.js';
import { lockKey } from '../../db/open.js';
import type { StoredEvent } from '../../events/outbox.js';
import { AppError } from '../../kernel/errors.js';
import { uuidv7 } from '../../lib/ids.js';
import { nowIso } from '../../lib/time.js';
import { toPage, type Page } from '../common.js';
import { DEFAULT_GRACE_SECONDS, type Delivery, type DeliveryDetail, type Webhook, type WebhookInput, type WebhookPatchInput } from './schema.js';
import type { SecretBox } from './secret-box.js';
import { newSecret, SECRET_PREFIX } from './sign.js';
import * as store from './store.js';

/** The webhooks' per-daemon live state, provided by their wire(). */
export interface WebhookRuntime {
  box: SecretBox;
  /** Tells the delivery worker that deliveries of `webhookId` (of any, when absent) may be due (after a commit). */
  kick(webhookId?: string): void;
  /** Forgets the opened secrets of a webhook (after a rotation). */
  secretsChanged(webhookId: string): void;
  /** Gives back claimed, unsent deliveries of a webhook that was changed, disabled or deleted. */
  release(webhookId: string): Promise<void>;
  /**
   * Resolves once the worker has looked for due deliveries and has nothing it could do now: no
   * look pending, no attempt waiting to be written, nothing claimed that a free slot could take
   * (and, with `wire`, nothing on the wire). What a test waits for before saying "nothing else came".
   */
  settled(opts?: { wire?: boolean }): Promise<void>;
  /** Compiled event patterns by their JSON (patterns are few and read per event). */
  matchers: Map<string, Matcher>;
}
export const WEBHOOKS = serviceKey<WebhookRuntime>('webhooks');

/** Every event is matched against every enabled webhook in its own transaction: keep that bounded. */
export const MAX_WEBHOOKS = 100;

/** Deleting a webhook answers this (like DELETE on tasks). */
const REMOVED = { removed: true as const };

export async function listWebhooks(app: App): Promise<Webhook[]> {
  return await store.listWebhooks(app.db);
}

export async function requireWebhook(app: App, id: string): Promise<Webhook> {
  // In a write: what the caller checks and then writes stays as read until it commits (lockKey).
  await lockKey(app.db, 'webhook', id);
  const w = await store.getWebhook(app.db, id);
  if (!w) throw new AppError('not_found', `Webhook "${id}" not found.`);
  return w;
}

async function addSecret(app: App, webhookId: string, now: string): Promise<string> {
  const secret = newSecret();
  const id = uuidv7();
  await store.insertSecret(app.db, webhookId, { id, ...app.services.get(WEBHOOKS).box.seal(id, secret), createdAt: now, expiresAt: null });
  return secret;
}

export async function createWebhook(app: App, input: WebhookInput): Promise<Webhook & { secret: string }> {
  const id = uuidv7();
  const now = nowIso(app.clock);
  const secret = await app.events.write(async () => {
    if ((await store.countWebhooks(app.db)) >= MAX_WEBHOOKS) throw new AppError('conflict', `A project can have at most ${MAX_WEBHOOKS} webhooks; delete one first.`);
    await store.insertWebhook(app.db, { id, url: input.url, events: input.events ?? ['*'], description: input.description ?? null, now });
    return await addSecret(app, id, now);
  });
  return { ...(await store.getWebhook(app.db, id))!, secret };
}

export async function updateWebhook(app: App, id: string, patch: WebhookPatchInput): Promise<Webhook> {
  await app.events.write(async () => {
    const w = await requireWebhook(app, id);
    const now = nowIso(app.clock);
    const enabled = patch.enabled ?? w.enabled;
    const disabledReason = enabled ? null : w.enabled ? 'disabled with PATCH' : w.disabledReason;
    await app.services.get(WEBHOOKS).release(id);
    await store.updateWebhook(app.db, id, {
      url: patch.url ?? w.url,
      events: patch.events ?? w.events,
      description: patch.description === undefined ? w.description : patch.description,
      enabled,
      disabledReason,
      now,
    });
    if (w.enabled && !enabled) await store.failPending(app.db, id, 'webhook disabled before this delivery was made', now);
  });
  app.services.get(WEBHOOKS).kick(id);
  return await requireWebhook(app, id);
}

/** Deletes the webhook with its deliveries, so its pending deliveries are cancelled. */
export async function deleteWebhook(app: App, id: string): Promise<{ removed: true }> {
  return await app.events.write(async () => {
    if (!(await store.deleteWebhook(app.db, id))) throw new AppError('not_found', `Webhook "${id}" not found.`);
    await app.services.get(WEBHOOKS).release(id);
    return REMOVED;
  });
}

export async function rotateSecret(app: App, id: string, graceSeconds: number = DEFAULT_GRACE_SECONDS): Promise<{ secret: string; previousSecretExpiresAt: string | null }> {
  return await app.events.write(async () => {
    await requireWebhook(app, id);
    const now = nowIso(app.clock);
    const expires = new Date(Date.parse(now) + graceSeconds * 1000).toISOString();
    await store.retireCurrentSecret(app.db, id, expires, now);
    const secret = await addSecret(app, id, now);
    app.services.get(WEBHOOKS).secretsChanged(id);
    return { secret, previousSecretExpiresAt: graceSeconds > 0 ? expires : null };
  });
}

/**
 * Every webhook's signing secrets (those still in a grace window too), for scrubbing text the
 * daemon did not write; each also without its `whsec_` prefix, the Standard Webhooks key. A secret
 * that no longer opens (webhooks.key replaced) is unknown to this daemon and cannot be scrubbed.
 */
export async function webhookSecrets(app: App): Promise<string[]> {
  const { box } = app.services.get(WEBHOOKS);
  return (await store.allSecrets(app.db)).flatMap((row) => {
    let secret: string;
    try {
      secret = box.open(row.id, row);
    } catch {
      return [];
    }
    return secret.startsWith(SECRET_PREFIX) ? [secret, secret.slice(SECRET_PREFIX.length)] : [secret];
  });
}

// Deliveries

export async function listDeliveries(app: App, id: string, q: { limit: number; before?: string }): Promise<Page<Delivery>> {
  await requireWebhook(app, id);
  return toPage(await store.listDeliveries(app.db, id, q.before, q.limit + 1), q.limit, (d) => d.id);
}

export async function getDelivery(app: App, id: string, deliveryId: string): Promise<DeliveryDetail> {
  await requireWebhook(app, id);
  const d = await store.getDelivery(app.db, id, deliveryId);
  if (!d) throw new AppError('not_found', `Delivery "${deliveryId}" of webhook ${id} not found.`);
  return { ...d, attemptLog: await store.listAttempts(app.db, deliveryId) };
}

function requireEnabled(w: Webhook): void {
  if (!w.enabled) throw new AppError('conflict', `Webhook ${w.id} is disabled (${w.disabledReason ?? 'by hand'}); enable it first with PATCH /v1/webhooks/${w.id} {"enabled": true}.`);
}

/** A new delivery of the same body (new id, fresh attempts), due now. */
export async function redeliver(app: App, id: string, deliveryId: string): Promise<Delivery> {
  const newId = await app.events.write(async () => {
    requireEnabled(await requireWebhook(app, id));
    const d = await store.getDelivery(app.db, id, deliveryId);
    if (!d) throw new AppError('not_found', `Delivery "${deliveryId}" of webhook ${id} not found.`);
    return await enqueueCopy(app, id, { id: d.id, eventId: d.eventId, event: d.event, body: d.body });
  });
  app.services.get(WEBHOOKS).kick(id);
  return (await store.getDeliveryRow(app.db, newId))!;
}

async function enqueueCopy(app: App, webhookId: string, d: { id: string; eventId: number; event: string; body: string }): Promise<string> {
  const newId = uuidv7();
  await store.insertDelivery(app.db, { id: newId, webhookId, eventId: d.eventId, event: d.event, body: d.body, redeliveryOf: d.id, dueAt: app.clock.now(), now: nowIso(app.clock) });
  return newId;
}

/**
 * Re-sends every delivery that failed since `since` (as Svix's recover does), each as a new
 * delivery linked to the failed one; a failed delivery already re-sent (pending or succeeded) is
 * skipped, so recovering twice sends nothing twice.
 */
export async function recover(app: App, id: string, since: string): Promise<{ recovered: number; deliveryIds: string[] }> {
  const ids = await app.events.write(async () => {
    requireEnabled(await requireWebhook(app, id));
    const copies: string[] = [];
    for (const d of await store.recoverable(app.db, id, new Date(since).toISOString())) copies.push(await enqueueCopy(app, id, d));
    return copies;
  });
  app.services.get(WEBHOOKS).kick(id);
  return { recovered: ids.length, deliveryIds: ids };
}

/** Emits webhook:test, which the sink delivers to this webhook only; answers that delivery. */
export async function sendTest(app: App, id: string): Promise<Delivery> {
  return await app.events.write(async () => {
    requireEnabled(await requireWebhook(app, id));
    // The event's own id: with several daemons on one state, lastId() may be another daemon's event.
    const e = app.events.emit('webhook:test', { webhookId: id });
    // Its id once written.
    await app.events.flush();
    return (await store.deliveryForEvent(app.db, id, e.id))!;
  });
}

// Fan-out, inside the event's transaction

export type Matcher = (name: string) => boolean;

function matcherOf(compiled: Map<string, Matcher>, patternsJson: string): Matcher {
  let m = compiled.get(patternsJson);
  if (!m) {
    const patterns: string[] = JSON.parse(patternsJson);
    const exact = new Set(patterns.filter((p) => !p.endsWith('*')));
    const prefixes = patterns.filter((p) => p.endsWith(':*')).map((p) => p.slice(0, -1));
    m = patterns.includes('*') ? () => true : (name) => exact.has(name) || prefixes.some((p) => name.startsWith(p));
    if (compiled.size > 1000) compiled.clear();
    compiled.set(patternsJson, m);
  }
  return m;
}

/**
 * The sink's read ahead (this resource's server.ts): the subscriptions, read in the write's
 * transaction before its first event takes an id, so that on PostgreSQL other daemons' writers do
 * not wait on this read (docs/webhooks.md, "Which events a webhook receives").
 */
export async function subscriptions(app: App): Promise<store.Subscription[]> {
  return await store.enabledWebhooks(app.db);
}

/** Which subscriptions get a delivery of `e`: webhook:test goes to the webhook it names, anything else to those whose patterns match. */
function receiverOf(app: App, e: StoredEvent): (h: store.Subscription) => boolean {
  if (e.name === 'webhook:test') {
    const target = e.data.webhookId;
    return (h) => h.id === target;
  }
  const matchers = app.services.get(WEBHOOKS).matchers;
  return (h) => matcherOf(matchers, h.events)(e.name);
}

/**
 * The sink has nothing to do for `e` (this resource's server.ts): none of the subscriptions read
 * ahead receives it. Without them (not read) it cannot say so.
 */
export function noDeliveries(app: App, e: StoredEvent, ahead?: unknown): boolean {
  const hooks = ahead as store.Subscription[] | undefined;
  if (!hooks) return false;
  if (!hooks.length) return true;
  const receives = receiverOf(app, e);
  return !hooks.some(receives);
}

/**
 * The EventLog sink (this resource's server.ts): writes one pending delivery per enabled webhook whose
 * patterns match, in the event's own transaction, so an acknowledged change always has its
 * deliveries. webhook:test goes only to the webhook it names. `ahead`: the subscriptions read
 * before the write's first event (subscriptions()); later events read them again.
 */
export async function enqueueDeliveries(app: App, e: StoredEvent, ahead?: unknown): Promise<void> {
  const hooks = (ahead as store.Subscription[] | undefined) ?? (await store.enabledWebhooks(app.db));
  if (!hooks.length) return;
  const receives = receiverOf(app, e);
  let body: string | undefined;
  const now = nowIso(app.clock);
  const due = app.clock.now();
  const runtime = app.services.get(WEBHOOKS);
  for (const h of hooks) {
    if (!receives(h)) continue;
    body ??= JSON.stringify({ event: e.name, data: e.data, timestamp: e.timestamp });
    if (!(await store.insertEventDelivery(app.db, { id: uuidv7(), webhookId: h.id, eventId: e.id, event: e.name, body, redeliveryOf: null, dueAt: due, now }, h.events))) continue;
    // The worker looks on the next turn of the event loop, after this transaction has committed
    // (a rolled-back one leaves nothing to find).
    runtime.kick(h.id);
  }
}

/** 410 Gone: disable the webhook, fail what was waiting, and say so with webhook:disabled. */
export async function disableGone(app: App, webhookId: string, url: string, reason: string): Promise<void> {
  const now = nowIso(app.clock);
  if (!(await store.disableWebhook(app.db, webhookId, reason, now))) return;
  await app.services.get(WEBHOOKS).release(webhookId);
  await store.failPending(app.db, webhookId, 'webhook disabled: its endpoint answered 410 Gone', now);
  app.events.emit('webhook:disabled', { webhookId, url, reason });
}

/**
 * One bounded step of delivery retention (the daemon's pruner runs it): settled deliveries older
 * than webhooks.retentionDays, then those beyond the newest webhooks.maxDeliveries, at most
 * `batch` of them. Pending deliveries are never pruned.
 */
export async function pruneDeliveries(app: App, batch: number): Promise<number> {
  const { retentionDays, maxDeliveries } = app.config().webhooks;
  return await store.pruneDeliveries(app.db, { olderThan: new Date(app.clock.now() - retentionDays * 86_400_000).toISOString(), keep: maxDeliveries }, batch);
}
