// The state database's interface, the one both providers answer (SqliteState, PgState) and the
// stores see; a file of its own so that the providers, the migrations and open.ts, which makes
// the providers, depend on it and not on each other.

export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/** A prepared statement of either provider; every call answers asynchronously. */
export interface Stmt {
  get(...params: unknown[]): Promise<unknown>;
  all(...params: unknown[]): Promise<unknown[]>;
  run(...params: unknown[]): Promise<RunResult>;
}

/**
 * The daemon's state database: a SQLite file (SqliteState) or PostgreSQL (PgState), behind one
 * asynchronous interface. Stores see only this. A transaction runs an async function; the
 * statements it awaits, however deep in the call chain, are part of it (AsyncLocalStorage), and
 * a transaction inside it is a savepoint.
 */
export interface DB {
  readonly dialect: 'sqlite' | 'postgres';
  prepare(sql: string): Stmt;
  exec(sql: string): Promise<void>;
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Starts `work` now in the caller's transaction; the transaction's later statements (those not
   * issued by `work` itself), its savepoints and its commit wait until it is over, and fail if it
   * fails (db/barrier.ts).
   */
  barrier(work: () => Promise<void>): Promise<void>;
  /**
   * Calls `fn` right after the caller's transaction commits (never if it rolls back), before the
   * transaction's own caller goes on; on SQLite before any other transaction can begin.
   */
  afterCommit(fn: () => void): void;
  close(): Promise<void>;
  /** A transaction of this state is open in the calling async context. */
  readonly inTransaction: boolean;
  /** The caller is barrier work of the transaction open in its async context (what it waits for would wait for it). */
  readonly inBarrier: boolean;
  /**
   * Runs `fn` outside the caller's transaction: what it schedules (a timer, an immediate) runs in
   * no transaction, even while the caller's is still open (a worker woken by a write must not
   * join it).
   */
  detach<T>(fn: () => T): T;
}

/**
 * A statement's text: one for both providers, or one per provider where they must differ. The
 * shared text is SQLite's spelling; PostgreSQL gets it with numbered placeholders (pg/translate.ts).
 */
export type Sql = string | { sqlite: string; postgres: string };
