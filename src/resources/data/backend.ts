import type { IdempotencyRef } from './idempotency.js';
import type { MigrationInT, MigrationRecord, OperationT, SchemaDefT } from './schema.js';
import type { Mode, TableGrants } from './sql-guard.js';

// Where application databases live is a provider (project.json `data.provider`). The service
// (service.ts) keeps the registry, grants, events and idempotency keys' owners; a backend stores
// and runs: one per daemon, chosen at start, wired by the daemon's data provider part.

/** What every database holds besides its rows: its schema and how many migrations made it. */
export interface DatabaseState {
  schema: SchemaDefT;
  schemaVersion: number;
}

/** A caller statement, admitted or refused by the backend's own rules. */
export interface QueryRequest {
  sql: string;
  params: (string | number | boolean | null)[];
  mode: Mode;
  maxRows: number;
  grants: TableGrants;
}

/** An answer serialised where it was made (a worker, a pool's connection): bytes for the HTTP layer. */
export interface EncodedAnswer {
  json: Uint8Array;
  replayed: boolean;
}

export interface Migrated {
  answer: DatabaseState & { record: MigrationRecord };
  replayed: boolean;
}

export interface DataBackend {
  /** Makes database `id` with `schema`; a failure leaves nothing behind. */
  create(id: string, schema: SchemaDefT): Promise<void>;
  /** Removes database `id` and everything in it (its registry row is already gone). */
  drop(id: string): Promise<void>;
  // `now` is the daemon's clock when the request came (a test's fake one): rows are stamped,
  // idempotency keys kept and expired, and migrations recorded at that time.

  /** A record batch (batch.ts's grammar), all or nothing. */
  batch(id: string, ops: OperationT[], now: number, ref?: IdempotencyRef): Promise<EncodedAnswer>;
  query(id: string, req: QueryRequest, now: number, ref?: IdempotencyRef): Promise<EncodedAnswer>;
  migrate(id: string, migration: MigrationInT, checksum: string, now: number): Promise<Migrated>;
  migrations(id: string): Promise<MigrationRecord[]>;
}
