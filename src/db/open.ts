import Database from './sqlite.js';
import { closeSync, existsSync, openSync } from 'node:fs';
import { migrate, type Migration } from './migrate.js';
import { PgState, type PgStateOptions } from './pg/state.js';
import { connectFailure, maskUrl } from './pg/url.js';
import { SqliteState } from './sqlite-state.js';
import type { DB, Sql, Stmt } from './state-db.js';

export type { DB, RunResult, Sql, Stmt } from './state-db.js';

export const isPostgres = (db: DB): db is PgState => db instanceof PgState;

/**
 * Opens a SQLite file for the daemon. The file is created 0600 before SQLite touches it, because
 * SQLite gives its -wal and -shm files the main file's mode. WAL with synchronous=NORMAL keeps every
 * committed transaction across a process crash (kill -9); only a power loss can drop the last ones.
 */
export async function openDatabase(file: string, migrations: readonly Migration[] = []): Promise<SqliteState> {
  if (file !== ':memory:' && !existsSync(file)) closeSync(openSync(file, 'a', 0o600));
  const raw = new Database(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  raw.pragma('foreign_keys = ON');
  raw.pragma('busy_timeout = 5000');
  const state = new SqliteState(raw);
  if (migrations.length) await migrate(state, migrations);
  return state;
}

/** Opens the state on PostgreSQL and brings its schema up to date (once, under a lock, whoever starts first). */
export async function openPostgresState(opts: PgStateOptions, migrations: readonly Migration[]): Promise<PgState> {
  const db = new PgState(opts);
  try {
    if (migrations.length) await migrate(db, migrations);
    else await db.exec('SELECT 1');
  } catch (err) {
    await db.close();
    const e = err as Error & { code?: string };
    // Not about reaching the server (a schema from a newer svc, say): as it is.
    if (!e.code) throw err;
    throw new Error(
      `Cannot use PostgreSQL for the state at ${maskUrl(opts.url)}: ${connectFailure(e.code, e.message)}. Fix state.url in project.json (or SVC_STATE_URL), or set state.provider to "sqlite".`,
    );
  }
  return db;
}

const cache = new WeakMap<DB, Map<string, Stmt>>();

/** A prepared statement, prepared once per database (by its text) and reused. */
export function stmt(db: DB, sql: Sql): Stmt {
  let m = cache.get(db);
  if (!m) cache.set(db, (m = new Map()));
  const text = typeof sql === 'string' ? sql : db.dialect === 'postgres' ? sql.postgres : sql.sqlite;
  let s = m.get(text);
  if (!s) m.set(text, (s = db.prepare(text)));
  return s;
}

/**
 * Serialises, until the current transaction ends, the transactions that read, check and then
 * write one entity (`scope`: a resource, `key`: its id), whether its row exists yet or not. On
 * PostgreSQL a transaction-scoped advisory lock (two keys: svc's scope hash and the entity's);
 * SQLite runs one transaction at a time already, so there it costs nothing.
 */
export async function lockKey(db: DB, scope: string, key: string): Promise<void> {
  // Outside a transaction there is nothing to hold it for.
  if (db.dialect !== 'postgres' || !db.inTransaction) return;
  await db.prepare('SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?)) AS locked').get(scope, key);
}

/**
 * Locks one row for the rest of the transaction (PostgreSQL: SELECT ... FOR UPDATE, which waits
 * for a writer of that row to finish); false when there is no such row. `table` and `column` are
 * the store's own names, never input. On SQLite a no-op that answers true.
 */
export async function lockRow(db: DB, table: string, column: string, key: unknown): Promise<boolean> {
  if (db.dialect !== 'postgres') return true;
  return (await db.prepare(`SELECT 1 AS locked FROM ${table} WHERE ${column} = ? FOR UPDATE`).get(key)) !== undefined;
}
