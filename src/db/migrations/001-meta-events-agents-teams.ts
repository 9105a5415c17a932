import type { Migration } from '../../kernel/resource.js';

export const migration: Migration = {
  version: 1,
  name: 'meta, events, agents and teams',
  sql: `
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

      -- The outbox: AUTOINCREMENT so an id is never reused, even after old rows are pruned;
      -- these ids are the SSE event ids and must not reset across restarts.
      CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX events_created_at ON events (created_at);

      CREATE TABLE teams (
        name TEXT PRIMARY KEY,
        description TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );

      CREATE TABLE agents (
        name TEXT PRIMARY KEY,
        team TEXT REFERENCES teams (name) ON UPDATE CASCADE ON DELETE RESTRICT,
        reports_to TEXT REFERENCES agents (name) ON UPDATE CASCADE ON DELETE RESTRICT,
        fields TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX agents_team ON agents (team);
      CREATE INDEX agents_reports_to ON agents (reports_to);
    `,
};
