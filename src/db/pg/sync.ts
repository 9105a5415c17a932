import { PortChannel, SharedChannel, type Channel, type Driver, type Reply, type Request, type Statement } from './channel.js';
import type { OutageReporter } from './outage.js';
import { toPostgres } from './translate.js';
import { isStateOutage, type StateOutageMark } from '../../kernel/errors.js';

// The daemon's state on PostgreSQL, with the interface the stores already use on SQLite: prepared
// statements whose get/all/run return at once, and transactions that are plain function calls.
// Every service writes a change and its events in one synchronous transaction; keeping that shape
// is what lets one service module serve both providers. The price is that a statement blocks the
// daemon's thread for one round trip to PostgreSQL (measured in docs/performance.md), as a SQLite
// statement blocks it for one page read; a statement longer than the wait bound fails with
// state_unavailable instead of hanging the daemon. How a statement reaches its thread, and which
// client runs it there (libpq, else `pg`), is channel.ts's.

/** A PostgreSQL error, with its SQLSTATE (`23505` unique violation, `40P01` deadlock...). */
export class PgStateError extends Error implements StateOutageMark {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'PgStateError';
  }

  /** No answer, the server down or restarting, the connection lost, too slow: not the statement's fault (kernel/errors.ts). */
  get stateOutage(): boolean {
    return this.code === undefined || OUTAGE_CODES.has(this.code) || /^(08|57P|53)/.test(this.code) || /^E[A-Z]+$/.test(this.code);
  }
}

/** The answer did not come in time: the connection is being replaced. */
export class StateUnavailableError extends Error implements StateOutageMark {
  readonly code = 'STATE_UNAVAILABLE';
  readonly stateOutage = true;
}

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
  /** libpq (needs the optional native addon), pg (pure JavaScript, slower), or auto: libpq when it loads. */
  driver?: Driver | 'auto';
  /** Told of each statement that could not reach the server, and of each that could (db/pg/outage.ts). */
  outage?: OutageReporter;
  /** The server's notices (a NOTICE of a migration's CREATE ... IF NOT EXISTS): the daemon logs them at debug. */
  onNotice?: (message: string) => void;
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

  /** As all(), without blocking the daemon's thread (PgStateDb.queryAsync). */
  async allAsync(...params: unknown[]): Promise<unknown[]> {
    const r = await this.db.queryAsync(this.text, params);
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
  private channel: Channel | null = null;
  private driverChoice: Driver | 'auto';
  private readonly statements = new Map<string, PgStatement>();
  private readonly waitMs: number;
  private depth = 0;
  private closed = false;
  /** Channels notified when the current transaction commits (sent with its COMMIT, no extra round trip), with their payloads. */
  private notify = new Map<string, string>();
  /** Reads waiting for the connection (queryAsync), and the one sent whose answer is awaited. */
  private readonly queue: Queued[] = [];
  private inflight: Inflight | null = null;
  private keepAlive: NodeJS.Timeout | undefined;

  constructor(readonly opts: PgStateOptions) {
    // The statement's own limit, plus the making of a connection (channel.ts CONNECT_TIMEOUT_MS) and a margin.
    this.waitMs = opts.waitMs ?? opts.statementTimeoutMs + 2_500;
    this.driverChoice = opts.driver ?? 'auto';
  }

  /** Which client runs the statements: known once the first one has run. */
  get driver(): Driver | 'auto' {
    return this.channel?.driver ?? this.driverChoice;
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
    this.call({ kind: 'exec', sql });
  }

  query(sql: string, params: unknown[]): Result {
    return this.call({ kind: 'query', sql, params });
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
    const gone = new StateUnavailableError('the state database is closed');
    if (this.inflight) this.inflight.reject(gone);
    this.inflight = null;
    for (const q of this.queue.splice(0)) q.reject(gone);
    this.letGo();
    this.channel?.close();
    this.channel = null;
  }

  /** The channel, opened (with its thread and connection) at first use or after one was abandoned. */
  private open(): Channel {
    if (this.closed) throw new StateUnavailableError('the state database is closed');
    // A thread that died (it cannot answer again): a new one, instead of waiting out every bound.
    if (this.channel?.dead) this.channel = null;
    if (!this.channel) {
      const data = { url: this.opts.url, statementTimeoutMs: this.opts.statementTimeoutMs };
      this.channel = this.driverChoice === 'pg' ? new PortChannel(data) : new SharedChannel(data);
    }
    return this.channel;
  }

  private abandon(channel: Channel): StateUnavailableError {
    channel.abandon();
    if (this.channel === channel) this.channel = null;
    return new StateUnavailableError(`the state database did not answer within ${(this.waitMs / 1000).toFixed(1)} s`);
  }

  private call(req: Statement): Result {
    const startedAt = this.opts.outage?.now();
    try {
      const result = this.send(req);
      this.opts.outage?.succeeded(startedAt);
      return result;
    } catch (err) {
      this.report(err, startedAt);
      throw err;
    }
  }

  /** Tells the outage reporter what a failed statement says of the server. */
  private report(err: unknown, startedAt: number | undefined): void {
    // Closed (the daemon stopping): what still asks finds it so, and that is no outage.
    if (this.closed) return;
    if (isStateOutage(err)) this.opts.outage?.failed(err, startedAt);
    // The server answered (a constraint, a syntax error): it is there.
    else if (err instanceof PgStateError) this.opts.outage?.succeeded(startedAt);
  }

  private send(req: Statement): Result {
    try {
      let deadline = performance.now() + this.waitMs;
      const inflight = this.inflight;
      if (inflight) {
        // A read sent without waiting went first: its answer comes first, within this call's bound,
        // from the channel it went on (a thread that died since answers nothing more: no wait).
        const { channel } = inflight;
        const answered = channel.wait(inflight.n, channel.dead ? 0 : Math.min(inflight.deadline, deadline));
        this.settleInflight(inflight, answered);
        // That read took the connection down with it: this statement gets a new one, and its own time.
        if (!answered) deadline = performance.now() + this.waitMs;
      }
      const ch = this.open();
      const n = ch.post(req);
      if (!ch.wait(n, deadline)) throw this.abandon(ch);
      const reply = ch.read();
      if (this.fallBack(ch, reply)) return this.send(req);
      return this.outcome(reply);
    } finally {
      // Reads queued meanwhile go out once this statement (and any transaction it is part of) is done.
      if (this.queue.length) setImmediate(() => this.pump());
    }
  }

  /**
   * No libpq here (koffi or libpq not installed, or a URL only `pg` takes) and the driver is auto:
   * the `pg` channel does the same work from now on; the caller sends its request again.
   */
  private fallBack(channel: Channel, reply: Reply): boolean {
    if (reply.error?.code !== 'LIBPQ_UNAVAILABLE' || this.driverChoice !== 'auto') return false;
    channel.close();
    if (this.channel === channel) this.channel = null;
    this.driverChoice = 'pg';
    return true;
  }

  /**
   * A read outside any transaction that does not block the daemon's thread: sent when the
   * connection is free, its answer awaited on the event loop. Inside a transaction it runs there,
   * at once, so it sees the transaction's own writes.
   */
  queryAsync(sql: string, params: unknown[]): Promise<Result> {
    if (this.depth > 0) {
      try {
        return Promise.resolve(this.query(sql, params));
      } catch (err) {
        return Promise.reject(err as Error);
      }
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ req: { kind: 'query', sql, params }, resolve, reject });
      this.pump();
    });
  }

  /** Sends the next queued read when the connection is free and no transaction is open. */
  private pump(): void {
    if (this.inflight || this.depth > 0 || this.closed || !this.queue.length) return;
    const next = this.queue.shift()!;
    let channel: Channel;
    let n: number;
    try {
      channel = this.open();
      n = channel.post(next.req);
    } catch (err) {
      // Not sent (a parameter the channel cannot carry): this read fails, the next ones go on.
      next.reject(err as Error);
      if (!this.queue.length) this.letGo();
      else setImmediate(() => this.pump());
      return;
    }
    const inflight = { ...next, channel, n, deadline: performance.now() + this.waitMs, startedAt: this.opts.outage?.now() };
    this.inflight = inflight;
    // Atomics.waitAsync holds nothing open: a read under way keeps the process alive, as a socket would.
    this.keepAlive ??= setInterval(() => undefined, 2 ** 30);
    void channel.waitAsync(inflight.n, inflight.deadline).then((ok) => {
      // A blocking statement may have taken this answer already.
      if (this.inflight !== inflight) return;
      this.settleInflight(inflight, ok);
      this.pump();
    });
  }

  private settleInflight(inflight: Inflight, answered: boolean): void {
    const { channel } = inflight;
    this.inflight = null;
    if (!this.queue.length) this.letGo();
    if (!answered) {
      const err = this.abandon(channel);
      this.report(err, inflight.startedAt);
      return inflight.reject(err);
    }
    const reply = channel.read();
    if (this.fallBack(channel, reply)) {
      // Sent again first, on the `pg` channel.
      this.queue.unshift(inflight);
      return;
    }
    try {
      inflight.resolve(this.outcome(reply));
      this.opts.outage?.succeeded(inflight.startedAt);
    } catch (err) {
      this.report(err, inflight.startedAt);
      inflight.reject(err as Error);
    }
  }

  private letGo(): void {
    clearInterval(this.keepAlive);
    this.keepAlive = undefined;
  }

  /** An answer as rows, or its error thrown. */
  private outcome(reply: Reply): Result {
    if (reply.notices) for (const n of reply.notices) this.opts.onNotice?.(n);
    if (reply.error) {
      // Outside a transaction nothing may stay aborted: a statement failing with "current
      // transaction is aborted" means something left one open, and it is closed now.
      if (reply.error.code === '25P02' && this.depth === 0) this.rollback('ROLLBACK');
      throw new PgStateError(reply.error.message, reply.error.code, reply.error.detail);
    }
    if (reply.binary) {
      // A Buffer reaches this thread as a plain Uint8Array (the port's clone) or a Buffer (v8.deserialize): one kind for the stores.
      for (const row of reply.rows) {
        for (const c of reply.binary) {
          const v = row[c];
          if (v instanceof Uint8Array && !Buffer.isBuffer(v)) row[c] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
        }
      }
    }
    return reply;
  }
}

type Result = { rows: Record<string, unknown>[]; rowCount: number };

interface Queued {
  req: Statement;
  resolve: (r: Result) => void;
  reject: (err: Error) => void;
}

interface Inflight extends Queued {
  /** The channel it went on, which alone can answer it. */
  channel: Channel;
  n: number;
  deadline: number;
  /** When it was sent, on the outage reporter's clock. */
  startedAt: number | undefined;
}
