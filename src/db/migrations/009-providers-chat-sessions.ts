import type { Migration } from '../../kernel/resource.js';

export const migration: Migration = {
  version: 9,
  name: 'providers and chat sessions',
  sql: `
      -- One row per provider that has failed since its last success; no row = healthy. Times are
      -- epoch milliseconds: they are only compared with the clock.
      CREATE TABLE provider_health (
        provider TEXT PRIMARY KEY,
        error_count INTEGER NOT NULL,
        billing_count INTEGER NOT NULL,
        cooldown_until INTEGER,
        disabled_until INTEGER,
        auth_failed INTEGER NOT NULL,
        last_error_reason TEXT,
        updated_at TEXT NOT NULL
      );
      -- A chat session keeps its messages (vault values redacted) so x-session-id can continue it.
      CREATE TABLE chat_sessions (
        id TEXT PRIMARY KEY,
        agent TEXT,
        model TEXT NOT NULL,
        messages TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
    `,
};
