import { monotonic, systemClock } from '../lib/clock.js';
import { nowIso } from '../lib/time.js';
import { packageVersion } from '../lib/version.js';
import type { PgState } from './pg/state.js';
import type { DB } from './state-db.js';
import { pgDdl } from './pg/translate.js';
import type { Migration } from '../kernel/resource.js';

export type { Migration } from '../kernel/resource.js';

/** The PostgreSQL state (its dialect says so; open.ts's isPostgres would import the providers). */
const isPostgres = (db: DB): db is PgState => db.dialect === 'postgres';

/**
 * The meta key holding the svc version that brought the schema to where it is: a refusal of a newer
 * state can then say which svc to upgrade to, not only that one is needed.
 */
export const SCHEMA_WRITER_KEY = 'schema.svcVersion';

/** Held by the daemon migrating a PostgreSQL state, so daemons starting together migrate once. */
const MIGRATE_LOCK = 0x73766302;
/** How long a daemon waits for another's migration before it gives up starting. */
const MIGRATE_WAIT_MS = 120_000;
/**
 * A migration's statement may run this long (or the state's statement timeout, if longer): it is
 * not a request, and one cut short (an index built on a big table) would stop the daemon's start.
 */
const MIGRATE_STATEMENT_MS = 60_000;

/**
 * Takes MIGRATE_LOCK, trying every 100 ms: a blocking pg_advisory_lock would be cut short by the
 * statement timeout (and the daemon's wait for an answer) while another daemon runs a long migration.
 */
async function waitForLock(db: PgState): Promise<void> {
  const deadline = monotonic() + MIGRATE_WAIT_MS;
  while (!((await db.prepare(`SELECT pg_try_advisory_lock(${MIGRATE_LOCK}) AS got`).get()) as { got: boolean }).got) {
    if (monotonic() > deadline) throw new Error(`another daemon has been migrating the state for ${MIGRATE_WAIT_MS / 1000} s; try again when it is done`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Applies, in version order and each in its own transaction, every migration the DB has not
 * recorded. Versions are unique and increasing but may have gaps: numbers are reserved per feature
 * and features land in any order, so a DB that has 8 may still need 6, and gets it. Forward only: a
 * DB that records a version this build does not know was written by a newer svc, and opening it is
 * refused rather than risked.
 */
export async function migrate(db: DB, migrations: readonly Migration[], svcVersion = packageVersion()): Promise<number> {
  if (isPostgres(db)) {
    // The lock is a session's: taken, used and let go on one connection of the pool.
    return db.session(
      async () => {
        await waitForLock(db);
        try {
          return await migrateHeld(db, migrations, svcVersion);
        } finally {
          await db.exec(`SELECT pg_advisory_unlock(${MIGRATE_LOCK})`);
        }
      },
      { statementTimeoutMs: Math.max(MIGRATE_STATEMENT_MS, db.opts.statementTimeoutMs) },
    );
  }
  return migrateHeld(db, migrations, svcVersion);
}

async function migrateHeld(db: DB, migrations: readonly Migration[], svcVersion: string): Promise<number> {
  const pg = isPostgres(db);
  {
    await db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TEXT NOT NULL
    )`);
    const sorted = [...migrations].sort((a, b) => a.version - b.version);
    sorted.forEach((m, i) => {
      if (!Number.isInteger(m.version) || m.version < 1 || (i > 0 && m.version === sorted[i - 1]!.version)) {
        throw new Error(`migration versions must be unique positive integers; found ${m.version} twice or invalid`);
      }
    });
    const known = new Set(sorted.map((m) => m.version));
    const applied = new Set(((await db.prepare('SELECT version FROM schema_migrations').all()) as { version: number }[]).map((r) => Number(r.version)));
    const unknown = [...applied].filter((v) => !known.has(v));
    if (unknown.length) {
      const writer = (await hasMeta(db)) ? ((await db.prepare(`SELECT value FROM meta WHERE key = '${SCHEMA_WRITER_KEY}'`).get()) as { value: string } | undefined)?.value : undefined;
      throw new Error(
        `the state database has schema version ${Math.max(...unknown)}, which this svc does not know; upgrade svc: ` +
          `the state was written by svc ${writer ?? '(a version that did not record itself)'}, and this is svc ${svcVersion}, which knows schema versions up to ${Math.max(0, ...known)}`,
      );
    }
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    const pending = sorted.filter((x) => !applied.has(x.version));
    for (const m of pending) {
      await db.transaction(async () => {
        await db.exec(pg ? (m.postgres ?? pgDdl(m.sql)) : m.sql);
        await record.run(m.version, m.name, nowIso(systemClock));
      });
    }
    await recordWriter(db, svcVersion, pending.length > 0);
    return sorted.length;
  }
}

/** The state's own migrations make `meta`; other lists (the data provider's, tests') have none. */
async function hasMeta(db: DB): Promise<boolean> {
  const sql = isPostgres(db) ? "SELECT to_regclass('meta') IS NOT NULL AS yes" : "SELECT count(*) > 0 AS yes FROM sqlite_master WHERE type = 'table' AND name = 'meta'";
  return Boolean(((await db.prepare(sql).get()) as { yes: boolean | number }).yes);
}

/**
 * Names this svc as the schema's writer when it migrated the schema, and on a state from before the
 * record existed (1.0.0's). A svc that opens a schema as it found it leaves the name alone: an older
 * svc with the same migrations did not bring the schema there.
 */
async function recordWriter(db: DB, svcVersion: string, migrated: boolean): Promise<void> {
  if (!(await hasMeta(db))) return;
  // Read first: a start that changes nothing writes nothing to a state other daemons share.
  if (!migrated && (await db.prepare('SELECT 1 AS one FROM meta WHERE key = ?').get(SCHEMA_WRITER_KEY))) return;
  await db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(SCHEMA_WRITER_KEY, svcVersion);
}
