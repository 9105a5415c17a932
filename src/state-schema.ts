import { orderMigrations, SHARED_MIGRATIONS } from './db/migrations.js';
import type { Migration } from './db/migrate.js';
import { RESOURCES } from './resources/index.js';

// The state database's schema, put together from the resources' descriptors: their migrations (and
// those in db/migrations/ that span several) in version order, and their tables.

export const STATE_MIGRATIONS: readonly Migration[] = orderMigrations(SHARED_MIGRATIONS, ...RESOURCES.map((r) => r.migrations ?? []));

/**
 * Every table `svc state export` copies, parents before children (foreign keys are checked as rows
 * go in): meta first, then each resource's in the list's order. A test checks this list against
 * the schema, so a new table cannot be left behind unnoticed.
 */
export const STATE_TABLES: readonly string[] = ['meta', ...RESOURCES.flatMap((r) => r.tables ?? [])];

/** Not copied: schema_migrations (each state records its own), and what each resource leaves behind (who runs now, the board's sessions). */
export const NOT_COPIED: readonly string[] = ['schema_migrations', ...RESOURCES.flatMap((r) => r.transientTables ?? [])];

/** The newest state schema version this svc knows: a state with a newer one belongs to a newer svc. */
export const latestSchemaVersion = (): number => Math.max(...STATE_MIGRATIONS.map((m) => m.version));
