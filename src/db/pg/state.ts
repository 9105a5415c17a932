import pg from 'pg';
import { monotonic } from '../../lib/clock.js';
import { ScopedStorage } from '../../lib/scoped-storage.js';
import { barrier, dropGate, gated, inBarrier, runAfter, settle, type Gated } from '../barrier.js';
import type { DB, RunResult, Stmt } from '../state-db.js';
import { PgStateError, StateUnavailableError, isStateOutage } from './errors.js';
import type { OutageReporter } from './outage.js';
import { toPostgres } from './translate.js';

// The daemon's state on PostgreSQL: a pool of `pg` connections, every statement awaited on the
// event loop, so a slow statement holds up only the request that sent it. A transaction holds one
// connection from BEGIN to COMMIT; the statements of the async function it runs find it through
// AsyncLocalStorage, so stores take no transaction parameter and a nested transaction is a
// savepoint. Isolation is READ COMMITTED: a service that reads, checks and then writes takes the
// row lock it needs (docs/deploy.md, "Concurrency on a shared state").

export interface PgStateOptions {
  url: string;
  /** One statement may run this long (PostgreSQL's statement_timeout). */
  statementTimeoutMs: number;
  /** The daemon waits this long for an answer or a free connection (default: the statement timeout plus a connection's set-up). */
  waitMs?: number;
  /** Connections at most (default POOL_SIZE). */
  pool?: number;
  /** Told of each statement that could not reach the server, and of each that could (db/pg/outage.ts). */
  outage?: OutageReporter;
  /** The server's notices (a NOTICE of a migration's CREATE ... IF NOT EXISTS): the daemon logs them at debug. */
  onNotice?: (message: string) => void;
}

/** A connection not made in this time fails the statement (the daemon's wait allows for it). */
export const CONNECT_TIMEOUT_MS = 2_000;
/**
 * Connections per daemon: a few, so that one request waiting on a lock (or a slow statement)
 * leaves the others theirs, and few enough that several daemons stay far below the server's
 * max_connections. More than the two cores here can keep busy only adds contention (measured in
 * docs/performance.md).
 */
export const POOL_SIZE = 6;

// State ids and counters are BIGINT in PostgreSQL; every one fits in a double (ids < 2^53).
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => (oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text'))) as typeof pg.types.getTypeParser,
};

type Result = { rows: Record<string, unknown>[]; rowCount: number };

/** A statement out on a connection. */
interface InFlight {
  client: pg.PoolClient;
  /** When it fails for want of an answer (monotonic ms). */
  due: number;
  /** How long it was given (ms). */
  wait: number;
  /** The watchdog cut its connection: it failed for want of an answer. */
  late: boolean;
}

/** A statement's answer is waited for this much longer than the server's statement_timeout (a connection's set-up, the round trip). */
const PAST_TIMEOUT_MS = 2_500;

/** How often the watchdog looks at the statements out: a statement fails at most this long past its wait bound. */
const WATCH_MS = 250;

interface Tx extends Gated {
  client: pg.PoolClient;
  /** Savepoints deep; 0: a session (one connection held, no transaction yet). */
  depth: number;
  /** False once it committed or rolled back: a callback scheduled inside it and run later is outside it. */
  open: boolean;
  /** Channels notified when it commits (sent with its COMMIT, no extra round trip), with their payloads. */
  notify: Map<string, string>;
  /** The connection broke under it: it goes back to the pool destroyed. */
  broken: boolean;
  /** What goes out with its COMMIT, in the same round trip (beforeCommit). */
  final: FinalStatement | null;
  /** Its statements' wait bound, when not the state's (a session given a statement timeout of its own). */
  waitMs?: number;
}

/**
 * A statement sent with a transaction's COMMIT, in one round trip: asked for its text once the
 * transaction's barrier work is over (null: nothing to send), and given its rows once it committed.
 * Its values are literals in the text (db/pg/translate.ts `literal`): a simple query of several
 * statements takes no parameters.
 */
export interface FinalStatement {
  text(): string | null;
  took(rows: Record<string, unknown>[]): void;
  /** Before a savepoint begins: what the statement would send is sent now instead (a rolled-back savepoint would take it along). */
  beforeSavepoint(): Promise<void>;
}

/** What a caller takes of a statement's answer: its rows, its first row, or what it changed. */
const ROWS = (r: Result): unknown[] => r.rows;
const FIRST = (r: Result): unknown => r.rows[0];
const CHANGES = (r: Result): RunResult => {
  const first = r.rows[0];
  return { changes: r.rowCount, lastInsertRowid: first && typeof first.id === 'number' ? first.id : 0 };
};

/** A statement of the PostgreSQL state, called like the SQLite one. */
class PgStmt implements Stmt {
  constructor(
    private readonly db: PgState,
    private readonly text: string,
    private readonly name: string,
  ) {}

  get(...params: unknown[]): Promise<unknown> {
    return this.db.query(this.text, params, this.name, FIRST);
  }

  all(...params: unknown[]): Promise<unknown[]> {
    return this.db.query(this.text, params, this.name, ROWS);
  }

  run(...params: unknown[]): Promise<RunResult> {
    return this.db.query(this.text, params, this.name, CHANGES);
  }
}

export class PgState implements DB {
  readonly dialect = 'postgres' as const;
  private readonly pool: pg.Pool;
  private readonly als = new ScopedStorage<Tx>();
  private readonly statements = new Map<string, PgStmt>();
  private readonly waitMs: number;
  private closed = false;
  /** Statements sent and not yet answered, and transactions open (busy). */
  private pending = 0;
  /** Statements sent and not yet answered, for the watchdog. */
  private readonly inFlight = new Set<InFlight>();
  private watchdog: NodeJS.Timeout | null = null;

  constructor(readonly opts: PgStateOptions) {
    this.waitMs = opts.waitMs ?? opts.statementTimeoutMs + PAST_TIMEOUT_MS;
    this.pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.pool ?? POOL_SIZE,
      application_name: 'svc state',
      statement_timeout: opts.statementTimeoutMs,
      // A daemon that stops between two statements of a transaction (suspended, a laptop's lid
      // closed, SIGSTOP) would hold its row locks until TCP gave up, hours later: its runner's row
      // among them, so no other daemon could take its runs over. The server ends such a session
      // after the same bound the daemon gives a server that stops answering.
      idle_in_transaction_session_timeout: this.waitMs,
      // Waiting for a free connection is bounded too: past it the request answers 503.
      connectionTimeoutMillis: Math.max(CONNECT_TIMEOUT_MS, this.waitMs),
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      // Statements sent with the COMMIT carry their values as literals (translate.ts literal): in
      // UTF-8, no multibyte character can end in a byte that reads as a quote or a backslash.
      client_encoding: 'UTF8',
      types,
    });
    // An idle connection that breaks (the server restarted) must never be an unhandled 'error': the pool drops it.
    this.pool.on('error', () => undefined);
    this.pool.on('connect', (c) => {
      c.on('notice', (n) => this.opts.onNotice?.(n.message ?? String(n)));
      // A connection lost while checked out between two statements (a transaction waiting on
      // something else): its next statement fails; the 'error' itself must not go unhandled.
      c.on('error', () => undefined);
    });
  }

  /** Whether a statement is out or a transaction open: a test's fake clock waits for quiet before it moves. */
  get busy(): boolean {
    return this.pending > 0;
  }

  get inBarrier(): boolean {
    const tx = this.als.getStore();
    return tx !== undefined && inBarrier(tx);
  }

  /** A transaction of this state is open in the calling async context. */
  get inTransaction(): boolean {
    const tx = this.als.getStore();
    return tx?.open === true && tx.depth > 0;
  }

  detach<T>(fn: () => T): T {
    return this.als.exit(fn);
  }

  prepare(sql: string): Stmt {
    let s = this.statements.get(sql);
    // Named, so each statement is parsed once per connection.
    if (!s) this.statements.set(sql, (s = new PgStmt(this, toPostgres(sql), `s${this.statements.size + 1}`)));
    return s;
  }

  /** Statements without parameters, several at once (DDL). */
  async exec(sql: string): Promise<void> {
    await this.query(sql, undefined);
  }

  /**
   * The current transaction's COMMIT goes out with `final`'s statement before it, in one round trip
   * (the event log's last events: the counter row they lock is then held only while the server
   * runs them and commits). One per transaction.
   */
  beforeCommit(final: FinalStatement): void {
    const tx = this.als.getStore();
    if (!tx?.open || tx.depth === 0) throw new Error('beforeCommit outside a transaction');
    if (tx.final && tx.final !== final) throw new Error('a transaction has one final statement');
    tx.final = final;
  }

  /** The current transaction's commit notifies `channel` (LISTEN/NOTIFY: heard only if it commits). */
  notifyAtCommit(channel: string, payload: string): void {
    const tx = this.als.getStore();
    if (!tx?.open || tx.depth === 0) throw new Error('notifyAtCommit outside a transaction');
    if (!/^[a-z_]+$/.test(channel) || !/^[\w-]*$/.test(payload)) throw new Error('a channel is a plain name and a payload plain word characters');
    tx.notify.set(channel, payload);
  }

  /**
   * One statement: on the caller's transaction's connection, else on a connection of the pool for
   * it alone. `pick` turns the answer into what the caller takes. The hot path of every store: a
   * promise of its own and pg's callbacks under it, no chain of async functions (each promise costs
   * the promise hooks a transaction open anywhere in the daemon turns on; docs/performance.md).
   */
  query<R = Result>(text: string, params: unknown[] | undefined, name?: string, pick?: (r: Result) => R): Promise<R> {
    const tx = this.als.getStore();
    if (tx?.open) {
      // After the barrier work started before it (the event log's writes, db/barrier.ts).
      if (gated(tx)) return settle(tx).then(() => this.send(tx.client, text, params, name, tx, pick));
      return this.send(tx.client, text, params, name, tx, pick);
    }
    return new Promise<R>((resolve, reject) =>
      this.connect(reject, (client) =>
        this.statement(client, text, params, name, undefined, (e, r) => {
          // A connection that could not answer is never reused.
          client.release(e !== null && isStateOutage(e));
          if (e) reject(e);
          else resolve(pick ? pick(r!) : (r as R));
        }),
      ),
    );
  }

  /**
   * Runs `fn` in a transaction: BEGIN on a connection of its own, COMMIT when it resolves, ROLLBACK
   * when it throws. Inside a transaction, a savepoint.
   */
  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    const cur = this.als.getStore();
    if (cur?.open && cur.depth > 0) return this.savepoint(cur, fn);
    // In a session, on its connection.
    const pinned = cur?.open ? cur.client : null;
    const client = pinned ?? (await this.acquire());
    const tx: Tx = { client, depth: 1, open: true, notify: new Map(), broken: false, gate: null, after: [], final: null, waitMs: pinned ? cur!.waitMs : undefined };
    this.pending++;
    try {
      await this.send(client, 'BEGIN', undefined, undefined, tx);
      const result = await this.als.run(tx, fn);
      await settle(tx);
      const last = tx.final?.text() ?? null;
      const notices = [...tx.notify].map(([c, p]) => `NOTIFY ${c}, '${p}'; `).join('');
      tx.open = false;
      const rows = await this.send(client, `${last === null ? '' : `${last}; `}${notices}COMMIT`, undefined, undefined, tx, ROWS);
      if (last !== null) tx.final!.took(rows as Record<string, unknown>[]);
      runAfter(tx);
      return result;
    } catch (err) {
      await dropGate(tx);
      if (tx.open || !tx.broken) {
        tx.open = false;
        // A ROLLBACK that fails means the connection, and the transaction with it, is gone.
        await this.send(client, 'ROLLBACK', undefined, undefined, tx).catch(() => undefined);
      }
      throw err;
    } finally {
      tx.open = false;
      this.pending--;
      if (!pinned) client.release(tx.broken);
    }
  }

  /**
   * Runs `fn` with one connection of the pool for all its statements (and transactions): what a
   * session-level advisory lock needs, taken, used and let go on the same connection. With
   * `statementTimeoutMs`, its statements have that long instead of the state's (a migration).
   */
  async session<T>(fn: () => Promise<T>, o: { statementTimeoutMs?: number } = {}): Promise<T> {
    if (this.inTransaction) throw new Error('a session inside a transaction');
    const timeout = o.statementTimeoutMs;
    if (timeout !== undefined && !(Number.isInteger(timeout) && timeout > 0)) throw new Error('a statement timeout is a positive integer of milliseconds');
    const client = await this.acquire();
    const s: Tx = { client, depth: 0, open: true, notify: new Map(), broken: false, gate: null, after: [], final: null };
    try {
      if (timeout !== undefined) {
        s.waitMs = Math.max(this.waitMs, timeout + PAST_TIMEOUT_MS);
        await this.send(client, `SET statement_timeout = ${timeout}`, undefined, undefined, s);
      }
      return await this.als.run(s, fn);
    } finally {
      s.open = false;
      // The connection goes back to the pool with the state's own timeout.
      if (timeout !== undefined && !s.broken) await this.send(client, 'RESET statement_timeout', undefined, undefined, s).catch(() => (s.broken = true));
      client.release(s.broken);
    }
  }

  private async savepoint<T>(tx: Tx, fn: () => Promise<T>): Promise<T> {
    await settle(tx);
    await tx.final?.beforeSavepoint();
    const sp = `sp${tx.depth}`;
    await this.send(tx.client, `SAVEPOINT ${sp}`, undefined, undefined, tx);
    tx.depth++;
    try {
      const r = await fn();
      await settle(tx);
      tx.depth--;
      await this.send(tx.client, `RELEASE SAVEPOINT ${sp}`, undefined, undefined, tx);
      return r;
    } catch (err) {
      await dropGate(tx);
      tx.depth--;
      if (!tx.broken) await this.send(tx.client, `ROLLBACK TO SAVEPOINT ${sp}; RELEASE SAVEPOINT ${sp}`, undefined, undefined, tx);
      throw err;
    }
  }

  /**
   * Reads in one consistent snapshot (an export): REPEATABLE READ, read only, so a long read
   * neither stops the daemons' writes nor sees half of one.
   */
  async snapshot<T>(fn: () => Promise<T>): Promise<T> {
    if (this.inTransaction) throw new Error('snapshot inside a transaction');
    const client = await this.acquire();
    const tx: Tx = { client, depth: 1, open: true, notify: new Map(), broken: false, gate: null, after: [], final: null };
    try {
      await this.send(client, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', undefined, undefined, tx);
      return await this.als.run(tx, fn);
    } finally {
      tx.open = false;
      await this.send(client, 'COMMIT', undefined, undefined, tx).catch(() => undefined);
      client.release(tx.broken);
    }
  }

  afterCommit(fn: () => void): void {
    const tx = this.als.getStore();
    if (!tx?.open || tx.depth === 0) throw new Error('afterCommit outside a transaction');
    tx.after.push(fn);
  }

  barrier(work: () => Promise<void>): Promise<void> {
    const tx = this.als.getStore();
    if (!tx?.open || tx.depth === 0) throw new Error('a barrier outside a transaction');
    return barrier(tx, work);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
    await this.pool.end().catch(() => undefined);
  }

  /** A connection from the pool, within the wait bound. */
  private acquire(): Promise<pg.PoolClient> {
    return new Promise((resolve, reject) => this.connect(reject, resolve));
  }

  /**
   * A connection from the pool, within the wait bound, handed to `then`; `fail` is told why not
   * (the pool closed, the server unreachable: reported to the outage log). Callbacks, not a
   * promise: the statement path of query() takes a connection for each statement.
   */
  private connect(fail: (err: Error) => void, then: (client: pg.PoolClient) => void): void {
    if (this.closed) return fail(new StateUnavailableError('the state database is closed'));
    const startedAt = this.opts.outage?.now();
    this.pool.connect((err, client) => {
      if (err || !client) {
        const e = this.wrap(err);
        this.report(e, startedAt);
        fail(e);
      } else then(client);
    });
  }

  /** One statement of a transaction or session (`tx`) on its connection. */
  private send<R = Result>(client: pg.PoolClient, text: string, params: unknown[] | undefined, name: string | undefined, tx?: Tx, pick?: (r: Result) => R): Promise<R> {
    return new Promise<R>((resolve, reject) =>
      this.statement(client, text, params, name, tx, (e, r) => {
        if (e) reject(e);
        else resolve(pick ? pick(r!) : (r as R));
      }),
    );
  }

  /**
   * One statement on `client`, its answer awaited within the wait bound. A server that stops
   * answering altogether (statement_timeout is the server's own) costs the connection: it is
   * destroyed, and the statement fails with state_unavailable.
   */
  private statement(client: pg.PoolClient, text: string, params: unknown[] | undefined, name: string | undefined, tx: Tx | undefined, done: (err: Error | null, r?: Result) => void): void {
    const startedAt = this.opts.outage?.now();
    this.pending++;
    const wait = tx?.waitMs ?? this.waitMs;
    const out: InFlight = { client, due: monotonic() + wait, wait, late: false };
    this.inFlight.add(out);
    this.watch();
    const answered = (err: Error | null, r: pg.QueryResult | undefined) => {
      this.pending--;
      this.inFlight.delete(out);
      if (err) {
        // Cut by the watchdog: the server did not answer in time.
        const e = out.late ? new StateUnavailableError(`the state database did not answer within ${(out.wait / 1000).toFixed(1)} s`) : this.wrap(err);
        // The connection is suspect (lost, or stuck in a statement the server will not end): never reused.
        if (isStateOutage(e) && tx) tx.broken = true;
        this.report(e, startedAt);
        done(e);
        return;
      }
      this.opts.outage?.succeeded(startedAt);
      // Several statements in one text answer one result each: the first is the one asked for.
      const first = Array.isArray(r) ? (r[0] as pg.QueryResult) : r!;
      done(null, { rows: first.rows as Record<string, unknown>[], rowCount: first.rowCount ?? 0 });
    };
    if (params === undefined) client.query(text, answered);
    else client.query(name ? { name, text, values: params } : { text, values: params }, answered);
  }

  /**
   * One watchdog for every statement out (a timer per statement cost more than the statement's
   * own bookkeeping): a statement unanswered past the wait bound has its connection cut, which
   * fails it (state_unavailable) and frees whatever the server held for it.
   */
  private watch(): void {
    if (this.watchdog || this.closed) return;
    this.watchdog = setInterval(
      () => {
        const now = monotonic();
        for (const out of this.inFlight) {
          if (out.due > now || out.late) continue;
          out.late = true;
          (out.client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
        }
        if (!this.inFlight.size && this.watchdog) {
          clearInterval(this.watchdog);
          this.watchdog = null;
        }
      },
      Math.min(WATCH_MS, Math.max(10, this.waitMs / 4)),
    );
    this.watchdog.unref();
  }

  private wrap(err: unknown): Error {
    if (err instanceof PgStateError || err instanceof StateUnavailableError) return err;
    if (this.closed) return new StateUnavailableError('the state database is closed');
    const e = err as Error & { code?: string; detail?: string };
    return new PgStateError(e.message, e.code, e.detail);
  }

  /** Tells the outage reporter what a failed statement says of the server. */
  private report(err: unknown, startedAt: number | undefined): void {
    // Closed (the daemon stopping): what still asks finds it so, and that is no outage.
    if (this.closed) return;
    if (isStateOutage(err)) this.opts.outage?.failed(err, startedAt);
    // The server answered (a constraint, a syntax error): it is there.
    else if (err instanceof PgStateError) this.opts.outage?.succeeded(startedAt);
  }
}
