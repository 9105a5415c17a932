import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 15,
  name: 'daemons present on the state',
  sql: `
      -- Each daemon on the state says it is there (every 15 s, and gone at a clean stop): several
      -- daemons may share a PostgreSQL state. keys = the fingerprint of the API keys it accepts
      -- (config/keys.ts), compared by svc doctor. seen_at is epoch ms.
      CREATE TABLE daemons (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        hostname TEXT NOT NULL,
        pid INTEGER NOT NULL,
        version TEXT NOT NULL,
        keys TEXT NOT NULL,
        started_at TEXT NOT NULL,
        seen_at INTEGER NOT NULL
      );
    `,
};
