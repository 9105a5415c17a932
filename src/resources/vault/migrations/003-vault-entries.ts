import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 3,
  name: 'vault entries',
  sql: `
      -- sealed = AES-256-GCM ciphertext + tag of the credentials JSON; keys = their names only.
      -- Removing an agent removes its entries: a later agent of the same name must not inherit them.
      CREATE TABLE vault_entries (
        agent TEXT NOT NULL REFERENCES agents (name) ON DELETE CASCADE,
        service TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('smtp', 'imap', 'oauth', 'api_key', 'login', 'custom')),
        label TEXT,
        keys TEXT NOT NULL,
        sealed BLOB NOT NULL,
        nonce BLOB NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (agent, service)
      );
    `,
};
