import Database from './sqlite.js';
import { closeSync, existsSync, openSync } from 'node:fs';
import { migrate, type Migration } from './migrate.js';
import { PgStateDb, PgStatement, type PgStateOptions } from './pg/sync.js';
import { connectFailure, maskUrl } from './pg/url.js';

/** A prepared statement of either provider (better-sqlite3's shape). */
export interface Stmt {
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  pluck(on?: boolean): Stmt;
}

/**
 * The daemon's state database: a SQLite file (better-sqlite3) or PostgreSQL through PgStateDb,
 * which answers the same calls synchronously. Stores see only this.
 */
export interface DB {
  prepare(sql: string): Stmt;
  transaction<A extends unknown[], T>(fn: (...args: A) => T): (...args: A) => T;
  exec(sql: string): unknown;
  close(): unknown;
  readonly inTransaction: boolean;
}

/**
 * A statement's text: one for both providers, or one per provider where they must differ. The
 * shared text is SQLite's spelling; PostgreSQL gets it with numbered placeholders (pg/translate.ts).
 */
export type Sql = string | { sqlite: string; postgres: string };

export const isPostgres = (db: DB): db is PgStateDb & DB => db instanceof PgStateDb;

/**
 * Opens a SQLite file for the daemon. The file is created 0600 before SQLite touches it, because
 * SQLite gives its -wal and -shm files the main file's mode. WAL with synchronous=NORMAL keeps every
 * committed transaction across a process crash (kill -9); only a power loss can drop the last ones.
 */
export function openDatabase(file: string, migrations: readonly Migration[] = []): DB {
  if (file !== ':memory:' && !existsSync(file)) closeSync(openSync(file, 'a', 0o600));
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  const state = db as unknown as DB;
  if (migrations.length) migrate(state, migrations);
  return state;
}

/** Opens the state on PostgreSQL and brings its schema up to date (once, under a lock, whoever starts first). */
export function openPostgresState(opts: PgStateOptions, migrations: readonly Migration[]): DB {
  const db = new PgStateDb(opts) as PgStateDb & DB;
  try {
    if (migrations.length) migrate(db, migrations);
    else db.exec('SELECT 1');
  } catch (err) {
    db.close();
    const e = err as Error & { code?: string };
    // Not about reaching the server (a schema from a newer svc, say): as it is.
    if (!e.code) throw err;
    if (e.code === 'LIBPQ_UNAVAILABLE') throw new Error(`state.driver is "libpq", but ${e.message}. Install libpq (Debian/Ubuntu: libpq5; macOS: brew install libpq) and svc's optional dependency koffi, or set state.driver to "auto" or "pg".`);
    throw new Error(`Cannot use PostgreSQL for the state at ${maskUrl(opts.url)}: ${connectFailure(e.code, e.message)}. Fix state.url in project.json (or SVC_STATE_URL), or set state.provider to "sqlite".`);
  }
  return db;
}

const cache = new WeakMap<DB, Map<string, Stmt>>();

/** A prepared statement, prepared once per connection (by its text) and reused. */
export function stmt(db: DB, sql: Sql): Stmt {
  let m = cache.get(db);
  if (!m) cache.set(db, (m = new Map()));
  const text = typeof sql === 'string' ? sql : isPostgres(db) ? sql.postgres : sql.sqlite;
  let s = m.get(text);
  if (!s) m.set(text, (s = db.prepare(text)));
  return s;
}

/**
 * A read for a route that need not block: on PostgreSQL the daemon's thread serves other requests
 * while the server answers (PgStateDb.queryAsync); on SQLite it runs at once. Outside a
 * transaction it sees what is committed; inside one, that transaction's own writes too.
 */
export function readRows(db: DB, sql: Sql, ...params: unknown[]): Promise<unknown[]> {
  const s = stmt(db, sql);
  if (s instanceof PgStatement) return s.allAsync(...params);
  try {
    return Promise.resolve(s.all(...params));
  } catch (err) {
    return Promise.reject(err as Error);
  }
}
