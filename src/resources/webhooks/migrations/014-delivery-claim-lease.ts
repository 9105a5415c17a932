import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 14,
  name: 'webhook delivery claims with a lease',
  sql: `
      -- Several daemons may share a PostgreSQL state: a claim (in_flight = 1) holds until
      -- claimed_until (epoch ms), after which any daemon may release it and send the delivery, so
      -- one that died mid-delivery does not keep it forever. SQLite has one daemon and ignores it.
      ALTER TABLE webhook_deliveries ADD COLUMN claimed_until INTEGER;
    `,
  postgres: `
      ALTER TABLE webhook_deliveries ADD COLUMN claimed_until BIGINT;
      -- Insertion order, as SQLite's rowid gives it: retention keeps the newest N deliveries as
      -- a range of this number (webhooks/store.ts pruneDeliveries). Existing rows are numbered too.
      ALTER TABLE webhook_deliveries ADD COLUMN seq BIGINT GENERATED ALWAYS AS IDENTITY;
      CREATE INDEX webhook_deliveries_seq ON webhook_deliveries (seq);
      -- Expired claims are looked for every few hundred milliseconds by every daemon.
      CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (claimed_until) WHERE in_flight = 1;
    `,
};
