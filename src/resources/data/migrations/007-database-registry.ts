import type { Migration } from '../../../kernel/resource.js';

export const migration: Migration = {
  version: 7,
  name: 'application databases registry',
  sql: `
      -- One row per application database; its records live in .svc/data/<id>.sqlite. schema and
      -- schema_version copy what the file holds (the file is the authority; see data/store.ts).
      CREATE TABLE data_databases (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        schema TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
    `,
};
