import { barrier, dropGate, gated, inBarrier, runAfter, settle, type Gated } from './barrier.js';
import type Database from './sqlite.js';
import type { DB, RunResult, Stmt } from './state-db.js';
import { ScopedStorage } from '../lib/scoped-storage.js';

// The daemon's state in a SQLite file, behind the same asynchronous interface as PostgreSQL's. A
// statement still runs synchronously on the one connection (a page read costs less than a
// promise's bookkeeping around it), so outside a transaction a call answers at once. A
// transaction is BEGIN IMMEDIATE ... COMMIT around an async function; while one is open, a
// statement or transaction from any other async context waits its turn (an async mutex), so a
// transaction never sees another's writes half-done and never interleaves with them. The
// transaction in progress follows its async call chain through AsyncLocalStorage: a nested one is
// a savepoint. Inside it, a statement waits for the barrier work started before it (barrier.ts).

interface Tx extends Gated {
  depth: number;
}

class SqliteStmt implements Stmt {
  constructor(
    private readonly db: SqliteState,
    private readonly s: Database.Statement,
  ) {}

  // Outside any transaction (most reads) a statement runs at once: turn() would too, after a
  // closure made for it on every call.
  get(...params: unknown[]): Promise<unknown> {
    if (!this.db.idle) return this.db.turn(() => this.s.get(...params));
    try {
      return Promise.resolve(this.s.get(...params));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  all(...params: unknown[]): Promise<unknown[]> {
    if (!this.db.idle) return this.db.turn(() => this.s.all(...params));
    try {
      return Promise.resolve(this.s.all(...params));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  run(...params: unknown[]): Promise<RunResult> {
    return this.db.turn(() => this.s.run(...params));
  }
}

export class SqliteState implements DB {
  readonly dialect = 'sqlite' as const;
  private readonly als = new ScopedStorage<Tx>();
  /** The transaction open now (at most one: one connection). */
  private current: Tx | null = null;
  private waiting: (() => void)[] = [];
  private readonly statements = new Map<string, SqliteStmt>();

  constructor(readonly raw: Database.Database) {}

  /** Whether a transaction is open or waited for: a test's fake clock waits for quiet before it moves. */
  get busy(): boolean {
    return this.current !== null || this.waiting.length > 0;
  }

  /** No transaction is open: a statement runs at once, whatever the caller's context (turn()). */
  get idle(): boolean {
    return this.current === null;
  }

  get inTransaction(): boolean {
    return this.current !== null && this.als.getStore() === this.current;
  }

  get inBarrier(): boolean {
    const tx = this.als.getStore();
    return tx !== undefined && tx === this.current && inBarrier(tx);
  }

  detach<T>(fn: () => T): T {
    return this.als.exit(fn);
  }

  prepare(sql: string): Stmt {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = new SqliteStmt(this, this.raw.prepare(sql))));
    return s;
  }

  exec(sql: string): Promise<void> {
    return this.turn(() => void this.raw.exec(sql));
  }

  /** Runs `work` now when no transaction is open or it is the caller's own; else once the open one ends. */
  turn<T>(work: () => T): Promise<T> {
    const mine = this.current !== null && this.als.getStore() === this.current;
    if (mine) {
      const g = gated(this.current!);
      if (g) return g.then(() => this.turn(work));
    }
    if (this.current === null || mine) {
      try {
        return Promise.resolve(work());
      } catch (err) {
        return Promise.reject(err as Error);
      }
    }
    return this.free().then(() => this.turn(work));
  }

  private free(): Promise<void> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    const mine = this.als.getStore();
    if (mine && mine === this.current) return this.savepoint(mine, fn);
    while (this.current !== null) await this.free();
    const tx: Tx = { depth: 1, gate: null, after: [] };
    this.current = tx;
    try {
      this.raw.exec('BEGIN IMMEDIATE');
      let result: T;
      try {
        result = await this.als.run(tx, fn);
        await settle(tx);
      } catch (err) {
        await dropGate(tx);
        if (this.raw.inTransaction) this.raw.exec('ROLLBACK');
        throw err;
      }
      this.raw.exec('COMMIT');
      // Before any other transaction can begin: its callbacks see the commits in their order.
      this.current = null;
      runAfter(tx);
      return result;
    } finally {
      this.current = null;
      // Every waiter looks again; the first to start a transaction makes the others wait anew.
      const waiting = this.waiting;
      this.waiting = [];
      for (const w of waiting) w();
    }
  }

  private async savepoint<T>(tx: Tx, fn: () => Promise<T>): Promise<T> {
    await settle(tx);
    const sp = `sp${tx.depth}`;
    this.raw.exec(`SAVEPOINT ${sp}`);
    tx.depth++;
    try {
      const r = await fn();
      await settle(tx);
      tx.depth--;
      this.raw.exec(`RELEASE ${sp}`);
      return r;
    } catch (err) {
      await dropGate(tx);
      tx.depth--;
      if (this.raw.inTransaction) this.raw.exec(`ROLLBACK TO ${sp}; RELEASE ${sp}`);
      throw err;
    }
  }

  afterCommit(fn: () => void): void {
    const tx = this.als.getStore();
    if (!tx || tx !== this.current) throw new Error('afterCommit outside a transaction');
    tx.after.push(fn);
  }

  barrier(work: () => Promise<void>): Promise<void> {
    const tx = this.als.getStore();
    if (!tx || tx !== this.current) throw new Error('a barrier outside a transaction');
    return barrier(tx, work);
  }

  async close(): Promise<void> {
    if (!this.raw.open) return;
    try {
      this.raw.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      this.raw.close();
    }
  }
}
