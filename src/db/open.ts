import Database from 'better-sqlite3';
import { closeSync, existsSync, openSync } from 'node:fs';
import { migrate, type Migration } from './migrate.js';

export type DB = Database.Database;

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
  if (migrations.length) migrate(db, migrations);
  return db;
}

const cache = new WeakMap<DB, Map<string, Database.Statement>>();

/** A prepared statement, prepared once per connection and reused. */
export function stmt(db: DB, sql: string): Database.Statement {
  let m = cache.get(db);
  if (!m) cache.set(db, (m = new Map()));
  let s = m.get(sql);
  if (!s) m.set(sql, (s = db.prepare(sql)));
  return s;
}
