import type { Migration } from '../../kernel/resource.js';

export const migration: Migration = {
  version: 4,
  name: 'missions and playbooks',
  sql: `
      -- A mission's tasks are the tasks whose mission_id names it; the list is not stored twice.
      CREATE TABLE missions (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        goal TEXT,
        status TEXT NOT NULL CHECK (status IN ('draft', 'active', 'paused', 'completed', 'failed', 'cancelled')),
        deadline TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX missions_status ON missions (status, id);

      -- parameters and mission are JSON: a template is read and written whole.
      CREATE TABLE playbooks (
        name TEXT PRIMARY KEY,
        description TEXT,
        parameters TEXT NOT NULL DEFAULT '[]',
        mission TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
    `,
};
