import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { compiledEntry } from '../../lib/entry.js';
import { toPostgres } from './translate.js';

// The daemon's state on PostgreSQL, with the interface the stores already use on SQLite: prepared
// statements whose get/all/run return at once, and transactions that are plain function calls.
// Every service writes a change and its events in one synchronous transaction; keeping that shape
// is what lets one service module serve both providers. The price is that a statement blocks the
// daemon's thread for one round trip to PostgreSQL (measured in docs/performance.md), as a SQLite
// statement blocks it for one page read; a statement longer than the wait bound fails with
// state_unavailable instead of hanging the daemon.

export type Request =
  | { kind: 'query'; id: number; sql: string; params: unknown[] }
  | { kind: 'exec'; id: number; sql: string }
  | { kind: 'reset' }
  | { kind: 'close' };

export type Reply =
  | { id: number; rows: Record<string, unknown>[]; rowCount: number; binary?: string[]; error?: undefined }
  | { id: number; error: { message: string; code?: string; detail?: string; constraint?: string } };

/** A PostgreSQL error, with its SQLSTATE (`23505` unique violation, `40P01` deadlock...). */
export class PgStateError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'PgStateError';
  }
}

/** The answer did not come in time: the connection is being replaced. */
export class StateUnavailableError extends Error {
  readonly code = 'STATE_UNAVAILABLE';
}

/**
 * The state database cannot be used right now (no answer in time, the server down or restarting,
 * the connection lost): the request may be tried again, unlike a statement that failed.
 */
export const isStateOutage = (err: unknown): boolean =>
  err instanceof StateUnavailableError ||
  (err instanceof PgStateError && (err.code === undefined || OUTAGE_CODES.has(err.code) || /^(08|57P|53)/.test(err.code) || /^E[A-Z]+$/.test(err.code)));

/** A statement stopped by statement_timeout (57014), a lock not had in time (55P03): the server was too slow, not the request wrong. */
const OUTAGE_CODES = new Set(['57014', '55P03']);

/**
 * Every write transaction of every daemon on one database takes this lock first, so writes are
 * serialised across daemons as SQLite serialises them within one: a service's read-check-write
 * stays correct, and event ids (taken from one sequence inside the lock) commit in id order, so a
 * reader of `id > last` never skips one that commits later.
 */
export const WRITE_LOCK = 0x73766301;

export interface PgStateOptions {
  url: string;
  /** One statement may run this long (PostgreSQL's statement_timeout). */
  statementTimeoutMs: number;
  /** The daemon waits this long for an answer (default: the statement timeout plus a connection's set-up). */
  waitMs?: number;
}

export interface RunResult {
  changes: number;
  lastInsertRowid: number;
}

/** A statement prepared for PostgreSQL, called like better-sqlite3's. */
export class PgStatement {
  private plucked = false;
  constructor(
    private readonly db: PgStateDb,
    private readonly text: string,
  ) {}

  pluck(on = true): this {
    this.plucked = on;
    return this;
  }

  get(...params: unknown[]): unknown {
    const rows = this.all(...params);
    return rows[0];
  }

  all(...params: unknown[]): unknown[] {
    const r = this.db.query(this.text, params);
    if (!this.plucked) return r.rows;
    return r.rows.map((row) => row[Object.keys(row)[0]!]);
  }

  run(...params: unknown[]): RunResult {
    const r = this.db.query(this.text, params);
    const first = r.rows[0];
    const id = first && typeof first.id === 'number' ? first.id : 0;
    return { changes: r.rowCount, lastInsertRowid: id };
  }
}

export class PgStateDb {
  readonly dialect = 'postgres' as const;
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly counter = new Int32Array(new SharedArrayBuffer(4));
  private readonly statements = new Map<string, PgStatement>();
  private readonly waitMs: number;
  private nextId = 1;
  private depth = 0;
  private closed = false;
  /** Channels notified when the current transaction commits (sent with its COMMIT, no extra round trip), with their payloads. */
  private notify = new Map<string, string>();

  constructor(readonly opts: PgStateOptions) {
    // The statement's own limit, plus the making of a connection (thread.ts CONNECT_TIMEOUT_MS) and a margin.
    this.waitMs = opts.waitMs ?? opts.statementTimeoutMs + 2_500;
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(compiledEntry(import.meta.url, './thread.js'), {
      workerData: { url: opts.url, port: port2, counter: this.counter.buffer, statementTimeoutMs: opts.statementTimeoutMs },
      transferList: [port2],
    });
    this.worker.unref();
    // A thread that dies takes its answers with it; calls then time out with state_unavailable.
    this.worker.on('error', () => undefined);
  }

  /** The current transaction's commit notifies `channel` (LISTEN/NOTIFY: heard only if it commits). */
  notifyAtCommit(channel: string, payload: string): void {
    if (this.depth === 0) throw new Error('notifyAtCommit outside a transaction');
    if (!/^[a-z_]+$/.test(channel) || !/^[\w-]*$/.test(payload)) throw new Error('a channel is a plain name and a payload plain word characters');
    this.notify.set(channel, payload);
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }

  prepare(sql: string): PgStatement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = new PgStatement(this, toPostgres(sql))));
    return s;
  }

  /** Statements without parameters, several at once (DDL, BEGIN...). */
  exec(sql: string): void {
    this.call({ kind: 'exec', id: this.nextId++, sql });
  }

  query(sql: string, params: unknown[]): { rows: Record<string, unknown>[]; rowCount: number } {
    return this.call({ kind: 'query', id: this.nextId++, sql, params });
  }

  /**
   * better-sqlite3's shape: returns a function that runs `fn` in a transaction (a savepoint when
   * nested). The top level takes WRITE_LOCK first.
   */
  transaction<A extends unknown[], T>(fn: (...args: A) => T): (...args: A) => T {
    return (...args: A): T => {
      const depth = this.depth;
      const sp = `sp${depth}`;
      // A BEGIN whose lock wait fails (statement timeout) leaves an aborted transaction open on the
      // connection: it is rolled back here, or every later statement would fail with it.
      this.guarded(depth === 0 ? `BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK})` : `SAVEPOINT ${sp}`, depth);
      this.depth++;
      let result: T;
      try {
        result = fn(...args);
        if (result instanceof Promise) throw new TypeError('a state transaction cannot be async');
      } catch (err) {
        this.depth = depth;
        if (depth === 0) this.notify.clear();
        this.rollback(depth === 0 ? 'ROLLBACK' : `ROLLBACK TO SAVEPOINT ${sp}; RELEASE SAVEPOINT ${sp}`);
        throw err;
      }
      this.depth = depth;
      if (depth > 0) {
        this.exec(`RELEASE SAVEPOINT ${sp}`);
        return result;
      }
      const notices = [...this.notify].map(([c, p]) => `NOTIFY ${c}, '${p}'; `).join('');
      this.notify.clear();
      this.guarded(`${notices}COMMIT`, 0);
      return result;
    };
  }

  /**
   * Reads in one consistent snapshot without the write lock (an export): REPEATABLE READ, read only,
   * so a long read neither stops the daemons' writes nor sees half of one.
   */
  snapshot<T>(fn: () => T): T {
    if (this.depth > 0) throw new Error('snapshot inside a transaction');
    this.exec('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    this.depth++;
    try {
      return fn();
    } finally {
      this.depth--;
      this.guarded('COMMIT', 0);
    }
  }

  /** Runs `sql`; when it fails at the top level, what it left open is rolled back before the error goes on. */
  private guarded(sql: string, depth: number): void {
    try {
      this.exec(sql);
    } catch (err) {
      if (depth === 0) this.rollback('ROLLBACK');
      throw err;
    }
  }

  /** Undoes what a failure left open; a rollback that fails means the connection, and the transaction with it, is gone. */
  private rollback(sql: string): void {
    try {
      this.exec(sql);
    } catch {
      // nothing left to undo
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.port.postMessage({ kind: 'close' } satisfies Request);
    // The thread ends its connection and exits on its own; terminate is the fallback.
    const t = setTimeout(() => void this.worker.terminate(), 2_000);
    t.unref();
    this.worker.once('exit', () => clearTimeout(t));
  }

  private call(req: Request & { id: number }): { rows: Record<string, unknown>[]; rowCount: number } {
    if (this.closed) throw new StateUnavailableError('the state database is closed');
    let seen = Atomics.load(this.counter, 0);
    this.port.postMessage(req);
    const deadline = performance.now() + this.waitMs;
    for (;;) {
      // Answers to calls that timed out earlier may still arrive first: skip them.
      for (let m = receiveMessageOnPort(this.port); m; m = receiveMessageOnPort(this.port)) {
        const reply = m.message as Reply;
        if (reply.id !== req.id) continue;
        if (reply.error) {
          // Outside a transaction nothing may stay aborted: a statement failing with "current
          // transaction is aborted" means something left one open, and it is closed now.
          if (reply.error.code === '25P02' && this.depth === 0) this.port.postMessage({ kind: 'exec', id: this.nextId++, sql: 'ROLLBACK' } satisfies Request);
          throw new PgStateError(reply.error.message, reply.error.code, reply.error.detail);
        }
        if (reply.binary) {
          for (const row of reply.rows) {
            for (const c of reply.binary) {
              const v = row[c];
              if (v instanceof Uint8Array) row[c] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
            }
          }
        }
        return reply;
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        this.port.postMessage({ kind: 'reset' } satisfies Request);
        throw new StateUnavailableError(`the state database did not answer within ${(this.waitMs / 1000).toFixed(1)} s`);
      }
      Atomics.wait(this.counter, 0, seen, left);
      seen = Atomics.load(this.counter, 0);
    }
  }
}
