import { isPostgres, stmt, type DB } from '../../db/open.js';
import type { Sealed } from '../vault/crypto.js';
import type { Attempt, Delivery, Webhook } from './schema.js';

// SQL only: webhooks, their sealed secrets, deliveries and attempts.

interface WebhookRow {
  id: string;
  url: string;
  events: string;
  description: string | null;
  enabled: number;
  disabled_reason: string | null;
  rotated_at: string | null;
  created_at: string;
  updated_at: string;
}

const WEBHOOK_SELECT = 'SELECT w.id, w.url, w.events, w.description, w.enabled, w.disabled_reason, w.secret_rotated_at AS rotated_at, w.created_at, w.updated_at FROM webhooks w';

const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  url: r.url,
  events: JSON.parse(r.events),
  description: r.description,
  enabled: r.enabled === 1,
  disabledReason: r.disabled_reason,
  secretRotatedAt: r.rotated_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function getWebhook(db: DB, id: string): Promise<Webhook | null> {
  const r = (await stmt(db, `${WEBHOOK_SELECT} WHERE w.id = ?`).get(id)) as WebhookRow | undefined;
  return r ? toWebhook(r) : null;
}

export async function listWebhooks(db: DB): Promise<Webhook[]> {
  return ((await stmt(db, `${WEBHOOK_SELECT} ORDER BY w.id`).all()) as WebhookRow[]).map(toWebhook);
}

export async function countWebhooks(db: DB): Promise<number> {
  return ((await stmt(db, 'SELECT COUNT(*) AS n FROM webhooks').get()) as { n: number }).n;
}

export async function insertWebhook(db: DB, w: { id: string; url: string; events: string[]; description: string | null; now: string }): Promise<void> {
  await stmt(db, 'INSERT INTO webhooks (id, url, events, description, enabled, created_at, updated_at) VALUES (?, ?, ?, ?, 1, ?, ?)').run(
    w.id,
    w.url,
    JSON.stringify(w.events),
    w.description,
    w.now,
    w.now,
  );
}

export async function updateWebhook(db: DB, id: string, w: { url: string; events: string[]; description: string | null; enabled: boolean; disabledReason: string | null; now: string }): Promise<void> {
  await stmt(db, 'UPDATE webhooks SET url = ?, events = ?, description = ?, enabled = ?, disabled_reason = ?, updated_at = ? WHERE id = ?').run(
    w.url,
    JSON.stringify(w.events),
    w.description,
    w.enabled ? 1 : 0,
    w.disabledReason,
    w.now,
    id,
  );
}

/** Compare-and-set: false when the webhook was already disabled (or is gone). */
export async function disableWebhook(db: DB, id: string, reason: string, now: string): Promise<boolean> {
  return (await stmt(db, 'UPDATE webhooks SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND enabled = 1').run(reason, now, id)).changes === 1;
}

export async function deleteWebhook(db: DB, id: string): Promise<boolean> {
  return (await stmt(db, 'DELETE FROM webhooks WHERE id = ?').run(id)).changes === 1;
}

/** A subscription: an enabled webhook's id and its patterns (JSON). */
export interface Subscription {
  id: string;
  events: string;
}

/** The subscriptions: every enabled webhook's (a small table, read per write). */
export async function enabledWebhooks(db: DB): Promise<Subscription[]> {
  return (await stmt(db, 'SELECT id, events FROM webhooks WHERE enabled = 1').all()) as Subscription[];
}

// Secrets

export interface SecretRow extends Sealed {
  id: string;
  createdAt: string;
  expiresAt: string | null;
}

export async function insertSecret(db: DB, webhookId: string, s: SecretRow): Promise<void> {
  await stmt(db, 'INSERT INTO webhook_secrets (id, webhook_id, sealed, nonce, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)').run(s.id, webhookId, s.sealed, s.nonce, s.createdAt, s.expiresAt);
}

/** Secrets still signing at `now`, the current one first. */
export async function liveSecrets(db: DB, webhookId: string, now: string): Promise<SecretRow[]> {
  return (await stmt(
    db,
    `SELECT id, sealed, nonce, created_at AS createdAt, expires_at AS expiresAt FROM webhook_secrets
     WHERE webhook_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY expires_at IS NULL DESC, created_at DESC`,
  ).all(webhookId, now)) as SecretRow[];
}

/** Every stored secret of every webhook, current, in its grace window or expired but not yet dropped. */
export async function allSecrets(db: DB): Promise<SecretRow[]> {
  return (await stmt(db, 'SELECT id, sealed, nonce, created_at AS createdAt, expires_at AS expiresAt FROM webhook_secrets').all()) as SecretRow[];
}

/** At most this many rotated-out secrets keep signing beside the current one. */
export const MAX_OLD_SECRETS = 4;

/** Ends the current secret's life at `expiresAt` and drops secrets already expired. */
export async function retireCurrentSecret(db: DB, webhookId: string, expiresAt: string, now: string): Promise<void> {
  await stmt(db, 'UPDATE webhook_secrets SET expires_at = ? WHERE webhook_id = ? AND expires_at IS NULL').run(expiresAt, webhookId);
  await stmt(db, 'UPDATE webhooks SET secret_rotated_at = ?, updated_at = ? WHERE id = ?').run(now, now, webhookId);
  await stmt(db, 'DELETE FROM webhook_secrets WHERE webhook_id = ? AND expires_at IS NOT NULL AND expires_at <= ?').run(webhookId, now);
  // Rotating again and again inside a grace window must not grow every delivery's headers.
  await stmt(
    db,
    `DELETE FROM webhook_secrets WHERE webhook_id = ? AND expires_at IS NOT NULL AND id NOT IN
       (SELECT id FROM webhook_secrets WHERE webhook_id = ? AND expires_at IS NOT NULL ORDER BY created_at DESC, id DESC LIMIT ?)`,
  ).run(webhookId, webhookId, MAX_OLD_SECRETS);
}

// Deliveries

interface DeliveryRow {
  id: string;
  webhook_id: string;
  event_id: number;
  event: string;
  status: Delivery['status'];
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
  redelivery_of: string | null;
  created_at: string;
  updated_at: string;
}

const DELIVERY_COLUMNS = 'id, webhook_id, event_id, event, status, attempts, last_status_code, last_error, next_attempt_at, redelivery_of, created_at, updated_at';

const toDelivery = (r: DeliveryRow): Delivery => ({
  id: r.id,
  webhookId: r.webhook_id,
  event: r.event,
  eventId: r.event_id,
  status: r.status,
  attempts: r.attempts,
  lastStatusCode: r.last_status_code,
  lastError: r.last_error,
  nextAttemptAt: r.status === 'pending' && r.next_attempt_at !== null ? new Date(r.next_attempt_at).toISOString() : null,
  redeliveryOf: r.redelivery_of,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface NewDelivery {
  id: string;
  webhookId: string;
  eventId: number;
  event: string;
  body: string;
  redeliveryOf: string | null;
  dueAt: number;
  now: string;
}

export async function insertDelivery(db: DB, d: NewDelivery): Promise<void> {
  await stmt(
    db,
    `INSERT INTO webhook_deliveries (id, webhook_id, event_id, event, body, status, attempts, next_attempt_at, redelivery_of, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)`,
  ).run(d.id, d.webhookId, d.eventId, d.event, d.body, d.dueAt, d.redeliveryOf, d.now, d.now);
}

/**
 * An event's delivery, written only while its webhook is enabled with the patterns `patterns`
 * (JSON, as stored). The sink matched the event against subscriptions it read before the event
 * took its id; on a shared state, another daemon may have disabled, deleted or changed the webhook
 * since, and a delivery to it must then not be left waiting (or fail the write on its foreign
 * key). Whether it was written.
 */
export async function insertEventDelivery(db: DB, d: NewDelivery, patterns: string): Promise<boolean> {
  const r = await stmt(
    db,
    `INSERT INTO webhook_deliveries (id, webhook_id, event_id, event, body, status, attempts, next_attempt_at, redelivery_of, created_at, updated_at)
     SELECT CAST(? AS TEXT), id, CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), 'pending', 0, CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT)
     FROM webhooks WHERE id = ? AND enabled = 1 AND events = ?`,
  ).run(d.id, d.eventId, d.event, d.body, d.dueAt, d.redeliveryOf, d.now, d.now, d.webhookId, patterns);
  return r.changes === 1;
}

export async function getDelivery(db: DB, webhookId: string, id: string): Promise<(Delivery & { body: string }) | null> {
  const r = (await stmt(db, `SELECT ${DELIVERY_COLUMNS}, body FROM webhook_deliveries WHERE id = ? AND webhook_id = ?`).get(id, webhookId)) as (DeliveryRow & { body: string }) | undefined;
  return r ? { ...toDelivery(r), body: r.body } : null;
}

/** Newest first by id (uuidv7): a page below `before` never shifts when new deliveries arrive. */
export async function listDeliveries(db: DB, webhookId: string, before: string | undefined, limit: number): Promise<Delivery[]> {
  const rows = before
    ? await stmt(db, `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? AND id < ? ORDER BY id DESC LIMIT ?`).all(webhookId, before, limit)
    : await stmt(db, `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?`).all(webhookId, limit);
  return (rows as DeliveryRow[]).map(toDelivery);
}

export async function listAttempts(db: DB, deliveryId: string): Promise<Attempt[]> {
  return (await stmt(db, 'SELECT n, at, status_code AS statusCode, error, duration_ms AS durationMs, response_body AS responseBody FROM webhook_attempts WHERE delivery_id = ? ORDER BY n').all(
    deliveryId,
  )) as Attempt[];
}

/** At most this many deliveries are queued again per recover call (a second call takes the rest). */
export const RECOVER_MAX = 10_000;

/** Failed deliveries of a webhook created at or after `since` that no later delivery re-sends yet. */
export async function recoverable(db: DB, webhookId: string, since: string): Promise<{ id: string; eventId: number; event: string; body: string }[]> {
  return (await stmt(
    db,
    `SELECT d.id, d.event_id AS eventId, d.event, d.body FROM webhook_deliveries d
     WHERE d.webhook_id = ? AND d.status = 'failed' AND d.created_at >= ?
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries r WHERE r.redelivery_of = d.id AND r.status != 'failed')
     ORDER BY d.id LIMIT ?`,
  ).all(webhookId, since, RECOVER_MAX)) as { id: string; eventId: number; event: string; body: string }[];
}

/** The delivery an event made for one webhook (POST /{id}/test answers it). */
export async function deliveryForEvent(db: DB, webhookId: string, eventId: number): Promise<Delivery | null> {
  const r = (await stmt(db, `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? AND event_id = ? ORDER BY id DESC LIMIT 1`).get(webhookId, eventId)) as DeliveryRow | undefined;
  return r ? toDelivery(r) : null;
}

export async function getDeliveryRow(db: DB, id: string): Promise<Delivery | null> {
  const r = (await stmt(db, `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = ?`).get(id)) as DeliveryRow | undefined;
  return r ? toDelivery(r) : null;
}

/** Fails a webhook's pending deliveries that no attempt is working on (it was disabled). */
export async function failPending(db: DB, webhookId: string, reason: string, now: string): Promise<number> {
  return (
    await stmt(db, "UPDATE webhook_deliveries SET status = 'failed', last_error = ?, next_attempt_at = NULL, updated_at = ? WHERE webhook_id = ? AND status = 'pending' AND in_flight = 0").run(
      reason,
      now,
      webhookId,
    )
  ).changes;
}

// The worker's queries

export interface Claimed {
  id: string;
  webhookId: string;
  url: string;
  event: string;
  body: string;
  attempts: number;
  /** When this daemon's claim runs out (epoch ms); also what tells its claim from a later one. */
  claimedUntil: number;
}

/** Each enabled webhook with deliveries waiting (pending, not on the wire): when its oldest is due (epoch ms). */
export async function dueHeads(db: DB): Promise<{ webhookId: string; dueAt: number }[]> {
  const rows = (await stmt(
    db,
    `SELECT w.id AS webhookId, (SELECT MIN(d.next_attempt_at) FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.in_flight = 0) AS dueAt
     FROM webhooks w WHERE w.enabled = 1`,
  ).all()) as { webhookId: string; dueAt: number | null }[];
  return rows.filter((r): r is { webhookId: string; dueAt: number } => r.dueAt !== null);
}

/**
 * One enabled webhook's oldest due deliveries, marked in flight until `claimedUntil` (epoch ms; the
 * claim's lease, read only on a shared state). Call inside a transaction.
 */
export async function claimDue(db: DB, webhookId: string, now: number, limit: number, claimedUntil: number): Promise<Claimed[]> {
  if (isPostgres(db)) {
    // One round trip for the whole claim. Rows another daemon is claiming (or recording) right now
    // are passed over, not waited for (SKIP LOCKED): several daemons claim side by side, each
    // taking what the others have not locked. The outer in_flight and status tests re-check each
    // row as updated, so a row claimed meanwhile is never taken twice.
    const rows = (await stmt(
      db,
      `UPDATE webhook_deliveries d SET in_flight = 1, claimed_until = ? FROM webhooks w
       WHERE w.id = d.webhook_id AND w.enabled = 1 AND d.status = 'pending' AND d.in_flight = 0 AND d.id IN (
         SELECT id FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending' AND in_flight = 0 AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ? FOR UPDATE SKIP LOCKED)
       RETURNING d.id, d.webhook_id AS webhookId, w.url, d.event, d.body, d.attempts, d.next_attempt_at AS dueAt`,
    ).all(claimedUntil, webhookId, now, limit)) as (Claimed & { dueAt: number })[];
    // RETURNING comes in no particular order: the oldest due goes first, as on SQLite.
    rows.sort((a, b) => a.dueAt - b.dueAt || (a.id < b.id ? -1 : 1));
    return rows.map(({ dueAt: _, ...c }) => ({ ...c, claimedUntil }));
  }
  const rows = (await stmt(
    db,
    `SELECT d.id, d.webhook_id AS webhookId, w.url, d.event, d.body, d.attempts FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
     WHERE d.webhook_id = ? AND d.status = 'pending' AND d.in_flight = 0 AND d.next_attempt_at <= ? AND w.enabled = 1 ORDER BY d.next_attempt_at LIMIT ?`,
  ).all(webhookId, now, limit)) as Claimed[];
  const mark = stmt(db, 'UPDATE webhook_deliveries SET in_flight = 1 WHERE id = ?');
  for (const r of rows) {
    await mark.run(r.id);
    r.claimedUntil = claimedUntil;
  }
  return rows;
}

/** Claimed rows given back unsent: due again as they were. */
export async function releaseClaims(db: DB, claims: readonly Pick<Claimed, 'id' | 'claimedUntil'>[]): Promise<void> {
  if (isPostgres(db)) {
    // Only while the claim is still this daemon's: one that expired may have been taken by another
    // daemon since (its claimed_until is then another), and that claim must stand.
    const s = stmt(db, 'UPDATE webhook_deliveries SET in_flight = 0, claimed_until = NULL WHERE id = ? AND in_flight = 1 AND claimed_until = ?');
    for (const c of claims) await s.run(c.id, c.claimedUntil);
    return;
  }
  const s = stmt(db, 'UPDATE webhook_deliveries SET in_flight = 0 WHERE id = ?');
  for (const c of claims) await s.run(c.id);
}

/**
 * At start. On SQLite this daemon is the only one, so nothing is in flight: what was is due again
 * now, with the same delivery id. On a shared state a claim may be another live daemon's, so only
 * claims whose lease has run out (or that predate leases) are given back.
 */
export async function releaseInFlight(db: DB, now: number): Promise<number> {
  return (
    await stmt(db, {
      sqlite: "UPDATE webhook_deliveries SET in_flight = 0, next_attempt_at = MIN(COALESCE(next_attempt_at, ?), ?) WHERE in_flight = 1 AND status = 'pending'",
      postgres:
        "UPDATE webhook_deliveries SET in_flight = 0, claimed_until = NULL, next_attempt_at = LEAST(COALESCE(next_attempt_at, $1), $2) WHERE in_flight = 1 AND status = 'pending' AND (claimed_until IS NULL OR claimed_until <= $2)",
    }).run(now, now)
  ).changes;
}

/** Shared state only: the URL of each of these webhooks that is still enabled. */
export async function enabledUrls(db: DB, ids: string[]): Promise<Map<string, string>> {
  const rows = (await stmt(db, 'SELECT id, url FROM webhooks WHERE enabled = 1 AND id = ANY($1::text[])').all(ids)) as { id: string; url: string }[];
  return new Map(rows.map((r) => [r.id, r.url]));
}

/** Shared state only: whether any claim's lease has run out (a read, without the write lock). */
export async function hasExpiredClaims(db: DB, now: number): Promise<boolean> {
  return (await stmt(db, "SELECT 1 AS x FROM webhook_deliveries WHERE in_flight = 1 AND status = 'pending' AND claimed_until <= ? LIMIT 1").get(now)) !== undefined;
}

/**
 * Shared state only: gives back claims whose lease ran out (their daemon died or hung mid-delivery),
 * due at once, for any daemon to take. Returns how many.
 */
export async function releaseExpiredClaims(db: DB, now: number): Promise<number> {
  return (
    await stmt(
      db,
      "UPDATE webhook_deliveries SET in_flight = 0, claimed_until = NULL, next_attempt_at = LEAST(COALESCE(next_attempt_at, $1), $1) WHERE in_flight = 1 AND status = 'pending' AND claimed_until <= $1",
    ).run(now)
  ).changes;
}

export interface AttemptRecord {
  n: number;
  at: string;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  responseBody: string | null;
}

/**
 * Records an attempt and the delivery's new state; false when the delivery is gone (webhook
 * deleted) or, on a shared state, when another daemon recorded an attempt of it since this one was
 * claimed (this daemon's claim had expired and the delivery was taken again): the record that is
 * there stands, and this attempt (a duplicate send, which at-least-once allows) is not written.
 */
export async function recordAttempt(db: DB, id: string, a: AttemptRecord, next: { status: Delivery['status']; nextAttemptAt: number | null; now: string }): Promise<boolean> {
  const changed = isPostgres(db)
    ? (
        await stmt(
          db,
          "UPDATE webhook_deliveries SET status = ?, attempts = ?, last_status_code = ?, last_error = ?, next_attempt_at = ?, in_flight = 0, claimed_until = NULL, updated_at = ? WHERE id = ? AND attempts = ? AND status = 'pending'",
        ).run(next.status, a.n, a.statusCode, a.error, next.nextAttemptAt, next.now, id, a.n - 1)
      ).changes
    : (
        await stmt(db, 'UPDATE webhook_deliveries SET status = ?, attempts = ?, last_status_code = ?, last_error = ?, next_attempt_at = ?, in_flight = 0, updated_at = ? WHERE id = ?').run(
          next.status,
          a.n,
          a.statusCode,
          a.error,
          next.nextAttemptAt,
          next.now,
          id,
        )
      ).changes;
  if (!changed) return false;
  await stmt(db, 'INSERT INTO webhook_attempts (delivery_id, n, at, status_code, error, duration_ms, response_body) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
    id,
    a.n,
    a.at,
    a.statusCode,
    a.error,
    a.durationMs,
    a.responseBody,
  );
  return true;
}

/**
 * Drops at most `limit` settled deliveries (with their attempts): first those created before
 * `olderThan`, then those beyond the newest `keep` rows. A pending delivery is never dropped.
 * Rows are numbered in insertion order (SQLite's rowid; on PostgreSQL the seq column of migration
 * 14; only the oldest are ever pruned), so "beyond the newest `keep`" is a range, not a count.
 * Returns how many were dropped.
 */
export async function pruneDeliveries(db: DB, o: { olderThan: string; keep: number }, limit: number): Promise<number> {
  let n = (
    await stmt(db, {
      sqlite: `DELETE FROM webhook_deliveries WHERE rowid IN (
       SELECT rowid FROM webhook_deliveries WHERE created_at < ? AND status != 'pending' ORDER BY created_at LIMIT ?)`,
      postgres: `DELETE FROM webhook_deliveries WHERE seq IN (
       SELECT seq FROM webhook_deliveries WHERE created_at < ? AND status != 'pending' ORDER BY created_at LIMIT ?)`,
    }).run(o.olderThan, limit)
  ).changes;
  if (n >= limit) return n;
  const top = ((await stmt(db, { sqlite: 'SELECT MAX(rowid) AS r FROM webhook_deliveries', postgres: 'SELECT MAX(seq) AS r FROM webhook_deliveries' }).get()) as { r: number | null }).r ?? 0;
  n += (
    await stmt(db, {
      sqlite: `DELETE FROM webhook_deliveries WHERE rowid IN (
       SELECT rowid FROM webhook_deliveries WHERE rowid <= ? AND status != 'pending' ORDER BY rowid LIMIT ?)`,
      postgres: `DELETE FROM webhook_deliveries WHERE seq IN (
       SELECT seq FROM webhook_deliveries WHERE seq <= ? AND status != 'pending' ORDER BY seq LIMIT ?)`,
    }).run(top - o.keep, limit - n)
  ).changes;
  return n;
}
