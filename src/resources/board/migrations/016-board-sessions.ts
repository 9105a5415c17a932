import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 16,
  name: 'board logins and sessions',
  sql: `
      -- The board's one-time login links and the sessions they were exchanged for (resources/board).
      -- Only SHA-256 digests of the tokens are kept; key_id is the digest of the API key that minted
      -- the link, so a session ends with its key. Times are ISO timestamps.
      CREATE TABLE board_logins (
        token_hash TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        read_only INTEGER NOT NULL DEFAULT 0,
        expires_at TEXT NOT NULL,
        used_at TEXT
      );
      CREATE TABLE board_sessions (
        id_hash TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        read_only INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      );
      CREATE INDEX board_sessions_expires_at ON board_sessions (expires_at);
    `,
};
