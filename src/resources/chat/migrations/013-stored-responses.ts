import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 13,
  name: 'stored responses',
  sql: `
      -- A stored answer of the Responses API: the whole conversation through it (secrets redacted),
      -- so previous_response_id continues from exactly that point, even after the session moved on.
      -- seq orders them for the cap on how many are kept.
      CREATE TABLE chat_responses (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL,
        agent TEXT,
        model TEXT NOT NULL,
        messages TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
    `,
};
