import { isPostgres, type DB } from './open.js';
import { pgDdl } from './pg/translate.js';

export interface Migration {
  version: number;
  name: string;
  /** The DDL, in SQLite's spelling; PostgreSQL runs pgDdl(sql) unless `postgres` gives its own. */
  sql: string;
  postgres?: string;
}

/** Held by the daemon migrating a PostgreSQL state, so daemons starting together migrate once. */
const MIGRATE_LOCK = 0x73766302;
/** How long a daemon waits for another's migration before it gives up starting. */
const MIGRATE_WAIT_MS = 120_000;

/**
 * Takes MIGRATE_LOCK, trying every 100 ms: a blocking pg_advisory_lock would be cut short by the
 * statement timeout (and the daemon's wait for an answer) while another daemon runs a long migration.
 */
function waitForLock(db: DB): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + MIGRATE_WAIT_MS;
  while (!(db.prepare(`SELECT pg_try_advisory_lock(${MIGRATE_LOCK}) AS got`).get() as { got: boolean }).got) {
    if (Date.now() > deadline) throw new Error(`another daemon has been migrating the state for ${MIGRATE_WAIT_MS / 1000} s; try again when it is done`);
    // Nothing else can run before the schema is known: the daemon is starting.
    Atomics.wait(pause, 0, 0, 100);
  }
}

/**
 * Applies, in version order and each in its own transaction, every migration the DB has not
 * recorded. Versions are unique and increasing but may have gaps: numbers are reserved per feature
 * and features land in any order, so a DB that has 8 may still need 6, and gets it. Forward only: a
 * DB that records a version this build does not know was written by a newer svc, and opening it is
 * refused rather than risked.
 */
export function migrate(db: DB, migrations: readonly Migration[]): number {
  const pg = isPostgres(db);
  if (pg) waitForLock(db);
  try {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
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
    const applied = new Set((db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => Number(r.version)));
    const unknown = [...applied].filter((v) => !known.has(v));
    if (unknown.length) {
      throw new Error(`the state database has schema version ${Math.max(...unknown)}, which this svc does not know; upgrade svc`);
    }
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of sorted.filter((x) => !applied.has(x.version))) {
      db.transaction(() => {
        db.exec(pg ? (m.postgres ?? pgDdl(m.sql)) : m.sql);
        record.run(m.version, m.name, new Date().toISOString());
      })();
    }
    return sorted.length;
  } finally {
    if (pg) db.exec(`SELECT pg_advisory_unlock(${MIGRATE_LOCK})`);
  }
}
