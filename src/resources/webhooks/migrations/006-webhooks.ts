import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 6,
  name: 'webhooks, their secrets, deliveries and attempts',
  sql: `
      -- events = JSON array of patterns. disabled_reason says why enabled = 0 (410 Gone, or by hand).
      CREATE TABLE webhooks (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        events TEXT NOT NULL,
        description TEXT,
        enabled INTEGER NOT NULL DEFAULT 1,
        disabled_reason TEXT,
        secret_rotated_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );

      -- Signing secrets, sealed (AES-256-GCM under .svc/webhooks.key). expires_at is null for the
      -- current secret; a rotated-out secret lives until its grace window ends.
      CREATE TABLE webhook_secrets (
        id TEXT PRIMARY KEY,
        webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
        sealed BLOB NOT NULL,
        nonce BLOB NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT
      );
      CREATE INDEX webhook_secrets_webhook ON webhook_secrets (webhook_id);

      -- One row per (event, webhook), written in the event's own transaction. body holds the exact
      -- envelope bytes that are signed and sent, so a redelivery 29 days later sends the same thing.
      -- next_attempt_at is epoch ms; in_flight marks a claimed delivery (reset to due on start).
      -- Deleting a webhook deletes its deliveries: pending ones are thereby cancelled.
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
        event_id INTEGER NOT NULL,
        event TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        last_status_code INTEGER,
        last_error TEXT,
        next_attempt_at INTEGER,
        in_flight INTEGER NOT NULL DEFAULT 0,
        redelivery_of TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, id);
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending' AND in_flight = 0;
      CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
      CREATE INDEX webhook_deliveries_redelivery ON webhook_deliveries (redelivery_of) WHERE redelivery_of IS NOT NULL;

      CREATE TABLE webhook_attempts (
        delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
        n INTEGER NOT NULL,
        at TEXT NOT NULL,
        status_code INTEGER,
        error TEXT,
        duration_ms INTEGER NOT NULL,
        response_body TEXT,
        PRIMARY KEY (delivery_id, n)
      ) WITHOUT ROWID;
    `,
};
