import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 12,
  name: 'webhook deliveries claimed per webhook',
  sql: `
      -- The worker claims each webhook's due deliveries on their own (so that one slow endpoint
      -- never fills every slot): a webhook's oldest due delivery is one seek in this index, which
      -- replaces the one ordered by due time alone.
      CREATE INDEX webhook_deliveries_due_by_webhook ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending' AND in_flight = 0;
      DROP INDEX webhook_deliveries_due;
    `,
};
