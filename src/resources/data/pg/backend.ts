import pg from 'pg';
import { AppError } from '../../../kernel/errors.js';
import { monotonic } from '../../../lib/clock.js';
import type { OutageReporter } from '../../../db/pg/outage.js';
import type { Logger } from '../../../kernel/log.js';
import type { DataBackend, DatabaseState, EncodedAnswer, Migrated, QueryRequest } from '../backend.js';
import { batchSteps, driveAsync, planBatch, type Step } from '../batch.js';
import { createTableSql, q } from '../ddl.js';
import { oldestKept, type IdempotencyRef } from '../idempotency.js';
import { planMigration } from '../migrations.js';
import { LIMITS, type ColumnType, type MigrationInT, type MigrationRecord, type OperationT, type SchemaDefT } from '../schema.js';
import { checkGrants } from '../sql-guard.js';
import { TYPES } from './connect.js';
import { PG, schemaFunctions } from './dialect.js';
import { isConnectionError, pgCode, pgError, unavailable } from './errors.js';
import { createSql, grantSql, IDEMPOTENCY_CONFLICT, lit, metaSql, namesOf, randomSecret, readerSql, scramVerifier, UNSHARED_FUNCTIONS, type PgNames } from './provision.js';
import { parsePg } from './parser.js';
import { runQuery, type ColumnTypes } from './query.js';
import { admitPgSql, type PgAdmission } from './subset.js';

// The PostgreSQL provider (data.provider "postgres"). One admin pool provisions databases, runs
// migrations and reads the daemon's own records; it never runs caller SQL. Record batches and caller
// SQL run on a small pool per database, logged in as that database's own role, each request in one
// transaction with its time limit and search_path set (tx below). A read-mode /query without an
// idempotency key runs instead on a second small pool per database, logged in as its read-only role
// with those settings given at connection start: one statement, one round trip (readPool below).

export interface PgBackendOptions {
  url: string;
  log: Logger;
  statementTimeoutMs: () => number;
  pool: { admin: number; perDatabase: number; idleMs: number; openDatabases: number };
  /** After a database's state was read from the server (the registry catches up, as with SQLite). */
  onOpened?(id: string, state: DatabaseState): void;
  /**
   * Several daemons on one state open the same databases: the roles' passwords and the database's
   * secret then come from this store (the first opener's, kept sealed in the state) instead of
   * being made afresh at each open, which would lock the other daemons' new connections out.
   */
  credentials?: CredentialStore;
  /** The state's URL when it is on PostgreSQL: in this same database, its role keeps the session advisory locks (hardenPublic). */
  stateUrl?: string | null;
  /** Told of each attempt that could not reach the server and of each that did: the daemon logs an outage twice, not per request (db/pg/outage.ts). */
  outage?: OutageReporter;
}

/** What opening a database sets on the server: its two roles' passwords and its secret. */
export interface DatabaseCredentials {
  password: string;
  readerPassword: string;
  secret: string;
}

export interface CredentialStore {
  /** The database's credentials, or `fresh()` recorded as them when it has none yet (atomically). */
  take(id: string, fresh: () => DatabaseCredentials): Promise<DatabaseCredentials>;
  drop(id: string): Promise<void>;
}

interface Open {
  names: PgNames;
  pool: pg.Pool;
  /** The reader role's password and pool, made with the time limit it was made for. */
  readerPassword: string;
  read?: { pool: pg.Pool; timeoutMs: number };
  /** Its pools were ended (closed when too many were open, or the database deleted). */
  ended?: boolean;
  secret: string;
  state: DatabaseState;
  types: ColumnTypes;
  admissions: Map<string, PgAdmission & { returning: boolean }>;
}

const SLOW_MS = 60_000;
/** Uses of one connection of a database's pool before it is replaced (see query.ts). */
const PREPARED_PER_CONNECTION = 1000;
/**
 * What the server lets through of one result before it stops it (query.ts): twice the API's limit
 * and some, since a row's size on the server (8 bytes an integer, a header a row) can pass its JSON
 * size; the daemon then measures the JSON exactly, as SQLite's worker does.
 */
const SERVER_RESULT_BYTES = 2 * LIMITS.resultBytes + 65_536;

export class PgBackend implements DataBackend {
  private readonly admin: pg.Pool;
  private readonly open = new Map<string, Promise<Open>>();
  private readonly url: URL;
  private closed = false;

  constructor(private readonly opts: PgBackendOptions) {
    this.url = new URL(opts.url);
    this.admin = this.listened(new pg.Pool({ connectionString: opts.url, max: opts.pool.admin, idleTimeoutMillis: opts.pool.idleMs, connectionTimeoutMillis: 5_000, types: TYPES }));
  }

  /**
   * A pool whose every client has listeners for its whole life, checked out or idle (pg-pool
   * listens only while a client is idle): a connection that breaks between two statements of a
   * request (the server stopped, 57P01, ECONNRESET) is an outage reported once, never an
   * unhandled 'error' event that ends the daemon. The server's notices go to the debug log.
   */
  private listened(pool: pg.Pool, database?: string): pg.Pool {
    pool.on('connect', (c) => {
      // A client made before the server was last seen back that breaks now starts no new outage.
      const madeAt = this.opts.outage?.now();
      c.on('error', (err) => this.opts.outage?.failed(err, madeAt));
      c.on('notice', (n) => this.opts.log.debug('PostgreSQL notice', { database, message: n.message }));
    });
    // An idle client that broke is dropped by the pool (its own listener reported it).
    pool.on('error', () => undefined);
    return pool;
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.open.values()];
    this.open.clear();
    await Promise.all(all.map((p) => p.then(endPools, () => undefined)));
    await this.admin.end();
  }

  /**
   * Revokes from PUBLIC, where the admin may, CREATE on schema public (PostgreSQL 15 does by
   * default) and EXECUTE on the large-object and session advisory-lock functions (provision.ts
   * UNSHARED_FUNCTIONS; only a superuser may, since the bootstrap superuser owns them). A state kept
   * in this same database under another role keeps the session locks its migrations take.
   */
  async hardenPublic(): Promise<void> {
    try {
      await this.admin.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
    } catch (err) {
      this.opts.log.warn('could not revoke CREATE on schema public from PUBLIC (the admin role does not own it); application roles may create objects there unless the server already forbids it', {
        error: (err as Error).message,
      });
    }
    const open = async () =>
      (
        await this.admin.query<{ f: string; lock: boolean }>(
          `SELECT p.oid::regprocedure::text AS f, p.proname LIKE 'pg\\_%' AS lock FROM pg_proc p WHERE ${UNSHARED_FUNCTIONS} AND has_function_privilege('public', p.oid, 'EXECUTE')`,
        )
      ).rows;
    try {
      let left = await open();
      if (!left.length) return;
      const su = (await this.admin.query<{ su: boolean }>('SELECT rolsuper AS su FROM pg_roles WHERE rolname = current_user')).rows[0]?.su;
      if (su) {
        // Names as the catalog prints them (a function and its argument types): nothing of a caller's.
        await this.admin.query(`REVOKE EXECUTE ON FUNCTION ${left.map((r) => `pg_catalog.${r.f}`).join(', ')} FROM PUBLIC`);
        const stateRole = this.sameDatabaseRole(this.opts.stateUrl);
        const locks = left.filter((r) => r.lock).map((r) => `pg_catalog.${r.f}`);
        if (stateRole && locks.length) await this.admin.query(`GRANT EXECUTE ON FUNCTION ${locks.join(', ')} TO ${q(stateRole)}`);
        left = await open();
      }
      if (left.length) {
        this.opts.log.warn(
          'could not revoke EXECUTE on the large-object and session advisory-lock functions from PUBLIC (only a superuser may): application roles can call them if the parser is bypassed; see docs/data.md, "The admin role"',
          { functions: left.length },
        );
      }
    } catch (err) {
      this.opts.log.warn('could not revoke EXECUTE on the large-object and session advisory-lock functions from PUBLIC', { error: (err as Error).message });
    }
  }

  /** The role of `url` when it names this server's database and another role than the admin, else null. */
  private sameDatabaseRole(url: string | null | undefined): string | null {
    if (!url) return null;
    try {
      const u = new URL(url);
      const same = u.hostname === this.url.hostname && (u.port || '5432') === (this.url.port || '5432') && u.pathname === this.url.pathname;
      const role = decodeURIComponent(u.username);
      return same && role && role !== decodeURIComponent(this.url.username) ? role : null;
    } catch {
      return null;
    }
  }

  /**
   * One transaction on a connection of `pool`, opened by `begin` (BEGIN and its SET LOCALs, one
   * round trip), committed after `fn`, rolled back on any failure. A connection that broke is
   * dropped from its pool, and the failure is 503: the server is gone, not the request wrong.
   */
  private async within<T>(pool: pg.Pool, begin: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const startedAt = this.opts.outage?.now();
    let c: pg.PoolClient;
    try {
      c = await pool.connect();
    } catch (err) {
      throw this.unreachable(err, startedAt);
    }
    let broken: Error | undefined;
    try {
      await c.query(begin);
      this.opts.outage?.succeeded(startedAt);
      const out = await fn(c);
      await c.query('COMMIT');
      return out;
    } catch (err) {
      if (isConnectionError(err)) broken = err as Error;
      await c.query('ROLLBACK').catch(() => undefined);
      throw broken ? this.unreachable(err, startedAt) : err;
    } finally {
      c.release(broken);
    }
  }

  /** An admin transaction, with search_path on the database's schema. */
  private adminTx<T>(n: PgNames | null, fn: (c: pg.PoolClient) => Promise<T>, timeoutMs = SLOW_MS): Promise<T> {
    return this.within(
      this.admin,
      `BEGIN; SET LOCAL statement_timeout = ${timeoutMs}; SET LOCAL lock_timeout = ${timeoutMs}; SET LOCAL TimeZone = 'UTC'${n ? `; SET LOCAL search_path = ${q(n.schema)}` : ''}`,
      fn,
    );
  }

  /**
   * An admin transaction that changes roles or the database's CONNECT grants. PostgreSQL updates
   * those catalog rows without waiting for another writer of the same row: two at once (two
   * daemons setting one role's password, two creates granting CONNECT on the one database) fail
   * with "tuple concurrently updated". So `fn` first takes the locks of what it changes, held by
   * every daemon of every project on this server (lockRoles, lockGrants, in that order); one that
   * still meets the error (someone else's GRANT) is tried again, and then answered 503.
   */
  private async rolesTx<T>(n: PgNames | null, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.adminTx(n, fn);
      } catch (err) {
        if (!concurrentlyUpdated(err)) throw err;
        if (attempt === 3) throw new AppError('data_unavailable', "Another change of the database server's roles ran at the same moment; retry.", { headers: { 'Retry-After': '1' } });
      }
    }
  }

  /** A 503 for an attempt begun at `startedAt` that could not reach the server; the outage log says it once. */
  private unreachable(err: unknown, startedAt?: number): AppError {
    this.opts.outage?.failed(err, startedAt);
    return unavailable();
  }

  // ---- lifecycle of one database ----

  async create(id: string, schema: SchemaDefT): Promise<void> {
    const n = namesOf(id);
    await this.rolesTx(n, async (c) => {
      for (const sql of createSql(n, this.opts.pool.perDatabase + 1)) await c.query(sql);
      for (const sql of schemaFunctions(q(n.schema))) await c.query(sql);
      for (const sql of metaSql(n, SERVER_RESULT_BYTES)) await c.query(sql);
      for (const [t, def] of Object.entries(schema.tables)) for (const sql of createTableSql(t, def, PG)) await c.query(sql);
      for (const sql of grantSql(n, schema)) await c.query(sql);
      await writeState(c, n, { schema, schemaVersion: 1 });
      // Last: the lock on the database's grants is held from here to the commit.
      await lockGrants(c);
      await grantConnect(c, n.role, n.reader);
    });
  }

  async drop(id: string): Promise<void> {
    const n = namesOf(id);
    await this.opts.credentials?.drop(id);
    const o = this.open.get(id);
    this.open.delete(id);
    if (o) await o.then(endPools, () => undefined);
    const roles = [n.role, n.reader];
    for (const role of roles) {
      await this.rolesTx(null, async (c) => {
        await lockRoles(c, n);
        await c.query(`ALTER ROLE ${q(role)} NOLOGIN`);
      }).catch(() => undefined);
    }
    // Connections of the roles that are not the daemon's own (none should be) are ended first.
    await this.admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ANY($1)', [roles]).catch(() => undefined);
    await this.rolesTx(null, async (c) => {
      await lockRoles(c, n);
      await c.query(`DROP SCHEMA IF EXISTS ${q(n.schema)}, ${q(n.meta)} CASCADE`);
      const db = (await c.query<{ d: string }>('SELECT current_database() AS d')).rows[0]!.d;
      await lockGrants(c);
      for (const role of roles) {
        const exists = (await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])).rowCount;
        if (exists) {
          await c.query(`REVOKE ALL ON DATABASE ${q(db)} FROM ${q(role)}`);
          await c.query(`DROP ROLE ${q(role)}`);
        }
      }
    });
  }

  /** The database's pool and state, opened on first use: a fresh password and secret each time (or the shared ones, see credentials). */
  private handle(id: string): Promise<Open> {
    let p = this.open.get(id);
    if (p) {
      // Most recently used last: the first is the one closed when too many are open.
      this.open.delete(id);
      this.open.set(id, p);
      return p;
    }
    p = this.openDatabase(id);
    this.open.set(id, p);
    p.catch(() => this.open.get(id) === p && this.open.delete(id));
    while (this.open.size > this.opts.pool.openDatabases) {
      const [oldId, old] = this.open.entries().next().value!;
      this.open.delete(oldId);
      void old.then(endPools, () => undefined);
    }
    return p;
  }

  private async openDatabase(id: string): Promise<Open> {
    if (this.closed) throw unavailable('The daemon is stopping.');
    const n = namesOf(id);
    const fresh = (): DatabaseCredentials => ({ password: randomSecret(), readerPassword: randomSecret(), secret: randomSecret() });
    // Setting the same values again is harmless: every daemon sharing them sets what the store holds.
    const { password, readerPassword, secret } = this.opts.credentials ? await this.opts.credentials.take(id, fresh) : fresh();
    const { state, types } = await this.rolesTx(n, async (c) => {
      await lockRoles(c, n);
      const state = await readState(c, n);
      // A database made before reads had a role of their own gets it now.
      if (!(await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [n.reader])).rowCount) {
        await lockGrants(c);
        for (const sql of readerSql(n, this.opts.pool.perDatabase + 1)) await c.query(sql);
        for (const sql of grantSql(n, state.schema)) await c.query(sql);
        await grantConnect(c, n.reader);
      }
      await c.query(`ALTER ROLE ${q(n.role)} PASSWORD ${lit(scramVerifier(password))}`);
      await c.query(`ALTER ROLE ${q(n.reader)} PASSWORD ${lit(scramVerifier(readerPassword))}`);
      await c.query(`DELETE FROM ${q(n.meta)}._svc_secret`);
      await c.query(`INSERT INTO ${q(n.meta)}._svc_secret VALUES (sha256(convert_to($1, 'UTF8')))`, [secret]);
      return { state, types: await columnTypes(c, n, state.schema) };
    });
    const pool = this.databasePool(id, n.role, password);
    this.opts.onOpened?.(id, state);
    return { names: n, pool, readerPassword, secret, state, types, admissions: new Map() };
  }

  /** A pool of connections of a database's role; `options` are settings given at connection start. */
  private databasePool(id: string, user: string, password: string, options?: string): pg.Pool {
    const pool = new pg.Pool({
      host: this.url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(this.url.port || 5432),
      database: decodeURIComponent(this.url.pathname.slice(1)) || undefined,
      user,
      password,
      ssl: sslOf(this.url),
      max: this.opts.pool.perDatabase,
      idleTimeoutMillis: this.opts.pool.idleMs,
      connectionTimeoutMillis: 5_000,
      types: TYPES,
      application_name: 'svc-data',
      options,
      // Caller statements are prepared on the connection that runs them (query.ts): a connection is
      // replaced after this many uses, which bounds what it keeps prepared on the server.
      maxUses: PREPARED_PER_CONNECTION,
    });
    return this.listened(pool, id);
  }

  /**
   * The database's read pool, logged in as its reader role, with what tx() sets per transaction
   * given once per connection instead: read only, search_path, UTC, and the time limit. Made again
   * (the old one ended once its connections are released) when data.statementTimeoutMs changed.
   */
  private readPool(id: string, o: Open, timeoutMs: number): pg.Pool {
    if (o.read?.timeoutMs === timeoutMs) return o.read.pool;
    const old = o.read?.pool;
    // Names are svc_<hex>: nothing in them needs escaping in the startup options.
    const options = [`default_transaction_read_only=on`, `search_path=${o.names.schema}`, `TimeZone=UTC`, `statement_timeout=${timeoutMs}`, `lock_timeout=${timeoutMs}`]
      .map((x) => `-c ${x}`)
      .join(' ');
    o.read = { pool: this.databasePool(id, o.names.reader, o.readerPassword, options), timeoutMs };
    if (old) void old.end().catch(() => undefined);
    return o.read.pool;
  }

  /** One read statement on the read pool: an implicit transaction, one round trip. */
  private async readOnce<T>(id: string, o: Open, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const timeout = this.opts.statementTimeoutMs();
    const startedAt = this.opts.outage?.now();
    let c: pg.PoolClient;
    try {
      if (o.ended) throw new Error('the pool was closed');
      c = await this.readPool(id, o, timeout).connect();
    } catch (err) {
      throw this.unreachable(err, startedAt);
    }
    let broken: Error | undefined;
    try {
      const out = await fn(c);
      this.opts.outage?.succeeded(startedAt);
      return out;
    } catch (err) {
      if (isConnectionError(err)) {
        broken = err as Error;
        throw this.unreachable(err, startedAt);
      }
      this.opts.outage?.succeeded(startedAt);
      throw pgError(err, timeout, o.state.schema);
    } finally {
      c.release(broken);
    }
  }

  /** A transaction of the database's role: time limit, search_path and READ ONLY for reads. */
  private async tx<T>(o: Open, mode: 'read' | 'write', fn: (c: pg.PoolClient, deadline: number) => Promise<T>): Promise<T> {
    const timeout = this.opts.statementTimeoutMs();
    const deadline = monotonic() + timeout;
    const begin = `BEGIN ${mode === 'read' ? 'READ ONLY' : 'READ WRITE'}; SET LOCAL statement_timeout = ${timeout}; SET LOCAL idle_in_transaction_session_timeout = ${timeout + 5_000}; SET LOCAL lock_timeout = ${timeout}; SET LOCAL search_path = ${q(o.names.schema)}; SET LOCAL TimeZone = 'UTC'`;
    try {
      return await this.within(o.pool, begin, async (c) => {
        const out = await fn(c, deadline);
        // A request that ran past its time in several statements is not kept either.
        if (monotonic() > deadline) throw Object.assign(new Error('past the deadline'), { code: '57014' });
        return out;
      });
    } catch (err) {
      if (pgCode(err) === IDEMPOTENCY_CONFLICT) {
        throw new AppError('data_conflict', 'This idempotencyKey was already used with a different request; use a new key for a new request.', {
          details: [{ path: 'body.idempotencyKey', message: 'already used with a different request' }],
        });
      }
      throw pgError(err, timeout, o.state.schema);
    }
  }

  private async take(c: pg.PoolClient, o: Open, ref: IdempotencyRef, now: number): Promise<string | null> {
    const r = await c.query<{ a: string | null }>(`SELECT ${q(o.names.meta)}.idem_take($1, $2, $3, $4, $5) AS a`, [o.secret, ref.owner, ref.key, ref.hash, oldestKept(now)]);
    return r.rows[0]!.a;
  }

  private async put(c: pg.PoolClient, o: Open, ref: IdempotencyRef, answer: string, now: number): Promise<void> {
    await c.query(`SELECT ${q(o.names.meta)}.idem_put($1, $2, $3, $4, $5, $6, $7)`, [o.secret, ref.owner, ref.key, ref.hash, answer, now, oldestKept(now)]);
  }

  // ---- requests ----

  async batch(id: string, ops: OperationT[], now: number, ref?: IdempotencyRef): Promise<EncodedAnswer> {
    const o = await this.handle(id);
    const schema = o.state.schema;
    const plans = planBatch(schema, ops, PG);
    return this.tx(o, 'write', async (c) => {
      if (ref) {
        const stored = await this.take(c, o, ref, now);
        if (stored !== null) return { json: Buffer.from(stored), replayed: true };
      }
      const answer = await driveAsync(batchSteps(PG, schema, plans, new Date(now).toISOString()), (s) => exec(c, s));
      const text = JSON.stringify(answer);
      if (ref) await this.put(c, o, ref, text, now);
      return { json: Buffer.from(text), replayed: false };
    });
  }

  async query(id: string, req: QueryRequest, now: number, ref?: IdempotencyRef): Promise<EncodedAnswer> {
    const o = await this.handle(id);
    const a = await this.admitted(o, req);
    checkGrants(new Set(a.reads), new Set(a.writes), req.grants);
    if (a.params !== req.params.length) {
      throw new AppError('data_invalid', `The parameters do not match the statement: it uses ${a.params}, and ${req.params.length} were given.`, {
        details: [{ path: 'body.params', message: `the statement uses ${a.params}` }],
      });
    }
    const run = (c: pg.PoolClient) => runQuery(c, o.names.meta, a.sql, req.params, req.maxRows, req.mode, a.returning, o.types);
    if (req.mode === 'write') {
      return this.tx(o, 'write', async (c) => {
        if (ref) {
          const stored = await this.take(c, o, ref, now);
          if (stored !== null) return { json: Buffer.from(stored), replayed: true };
        }
        const text = JSON.stringify(await run(c));
        if (ref) await this.put(c, o, ref, text, now);
        return { json: Buffer.from(text), replayed: false };
      });
    }
    // Without a key, a read is the one statement on the read pool.
    if (!ref) return { json: Buffer.from(JSON.stringify(await this.readOnce(id, o, run))), replayed: false };
    // A read changes nothing: its answer is stored after it, in a transaction of its own (READ
    // ONLY forbids the write of the record in the read's own).
    const out = await this.tx(o, 'read', async (c) => {
      if (ref) {
        const stored = await this.take(c, o, ref, now);
        if (stored !== null) return { json: Buffer.from(stored), replayed: true };
      }
      return { json: Buffer.from(JSON.stringify(await run(c))), replayed: false };
    });
    if (ref && !out.replayed) await this.tx(o, 'write', (c) => this.put(c, o, ref, Buffer.from(out.json).toString(), now));
    return out;
  }

  private async admitted(o: Open, req: QueryRequest): Promise<PgAdmission & { returning: boolean }> {
    const key = `${req.mode}\u0000${req.sql}`;
    let hit = o.admissions.get(key);
    if (!hit) {
      if (req.sql.includes('\u0000')) throw new AppError('data_invalid', 'The SQL contains a NUL character.', { details: [{ path: 'body.sql', message: 'The SQL contains a NUL character.' }] });
      const a = await admitPgSql(req.sql, req.mode, new Set(Object.keys(o.state.schema.tables)), req.params.length);
      hit = { ...a, returning: a.kind !== 'select' && (await hasReturning(a.sql)) };
      if (o.admissions.size >= 200) o.admissions.delete(o.admissions.keys().next().value!);
      o.admissions.set(key, hit);
    }
    return hit;
  }

  async migrate(id: string, m: MigrationInT, checksum: string, now: number): Promise<Migrated> {
    const o = await this.handle(id);
    const n = o.names;
    const r = await this.adminTx(n, async (c): Promise<Migrated & { types?: ColumnTypes }> => {
      // The schema record's row lock orders two migrations of one database.
      await c.query(`SELECT 1 FROM ${q(n.meta)}._svc_meta WHERE key = 'schemaVersion' FOR UPDATE`);
      const prev = (await c.query<{ checksum: string; answer: string }>(`SELECT checksum, answer FROM ${q(n.meta)}._svc_migrations WHERE id = $1`, [m.id])).rows[0];
      if (prev) {
        if (prev.checksum !== checksum)
          throw new AppError('data_conflict', `Migration ${m.id} was already applied with other content; give a new migration a new id.`, {
            details: [{ path: 'body.id', message: 'already applied with other content' }],
          });
        return { answer: JSON.parse(prev.answer), replayed: true };
      }
      const state = await readState(c, n);
      if (m.expectedVersion !== state.schemaVersion) {
        throw new AppError('data_conflict', `The database is at schemaVersion ${state.schemaVersion}, not ${m.expectedVersion}.`, {
          details: [{ path: 'body.expectedVersion', message: `the database is at ${state.schemaVersion}` }],
        });
      }
      const plan = planMigration(state.schema, m, PG);
      try {
        for (const sql of plan.ddl) await c.query(sql);
      } catch (err) {
        if (isConnectionError(err)) throw err;
        const e = pgError(err);
        throw new AppError(e.code === 'data_invalid' ? 'data_conflict' : e.code, `The migration cannot be applied to the current data: ${e.message}`);
      }
      for (const sql of grantSql(n, plan.schema)) await c.query(sql);
      const next: DatabaseState = { schema: plan.schema, schemaVersion: state.schemaVersion + 1 };
      const record: MigrationRecord = { id: m.id, checksum, schemaVersion: next.schemaVersion, appliedAt: new Date(now).toISOString() };
      await writeState(c, n, next);
      const answer = { ...next, record };
      await c.query(`INSERT INTO ${q(n.meta)}._svc_migrations (id, checksum, schema_version, applied_at, answer) VALUES ($1, $2, $3, $4, $5)`, [
        m.id,
        checksum,
        next.schemaVersion,
        record.appliedAt,
        JSON.stringify(answer),
      ]);
      return { answer, replayed: false, types: await columnTypes(c, n, plan.schema) };
    });
    if (!r.replayed) {
      o.state = { schema: r.answer.schema, schemaVersion: r.answer.schemaVersion };
      o.types = r.types!;
      o.admissions.clear();
    }
    return { answer: r.answer, replayed: r.replayed };
  }

  async migrations(id: string): Promise<MigrationRecord[]> {
    const n = (await this.handle(id)).names;
    const rows = await this.adminTx(
      n,
      async (c) =>
        (
          await c.query<{ id: string; checksum: string; schema_version: number; applied_at: string }>(
            `SELECT id, checksum, schema_version, applied_at FROM ${q(n.meta)}._svc_migrations ORDER BY schema_version`,
          )
        ).rows,
    );
    return rows.map((r) => ({ id: r.id, checksum: r.checksum, schemaVersion: r.schema_version, appliedAt: r.applied_at }));
  }
}

/**
 * The advisory locks that order changes of roles and of CONNECT grants (rolesTx): (ROLES_LOCK, a
 * database's hash) for its two roles, ROLES_LOCK alone (the other key space) for the grants on the
 * one server database, which every create and delete changes. The state's locks are 0x73766301
 * and 0x73766302.
 */
const ROLES_LOCK = 0x73766303;
const lockRoles = (c: pg.PoolClient, n: PgNames) => c.query(`SELECT pg_advisory_xact_lock(${ROLES_LOCK}, hashtext($1))`, [n.role]);
const lockGrants = (c: pg.PoolClient) => c.query(`SELECT pg_advisory_xact_lock(${ROLES_LOCK}::bigint)`);

/** PostgreSQL's "tuple concurrently updated" (or deleted): two writers of one catalog row at once. */
const concurrentlyUpdated = (err: unknown): boolean => pgCode(err) === 'XX000' && /^tuple concurrently (updated|deleted)$/.test((err as Error).message);

/** Ends a database's pools (its connections are closed as they are released). */
const endPools = async (o: Open): Promise<void> => {
  o.ended = true;
  await Promise.all([o.pool.end(), o.read?.pool.end()]);
};

/** CONNECT on the current database for `roles`, where the admin may grant it (else PUBLIC has it). */
async function grantConnect(c: pg.PoolClient, ...roles: string[]): Promise<void> {
  const db = (await c.query<{ d: string }>('SELECT current_database() AS d')).rows[0]!.d;
  await c.query('SAVEPOINT connect');
  try {
    await c.query(`GRANT CONNECT ON DATABASE ${q(db)} TO ${roles.map(q).join(', ')}`);
  } catch {
    await c.query('ROLLBACK TO SAVEPOINT connect');
  }
}

/** One statement of a batch: its `?` become $1…$n (generated SQL has no `?` anywhere else). */
async function exec(c: pg.PoolClient, s: Step): Promise<unknown> {
  let i = 0;
  const r = await c.query({ text: s.sql.replace(/\?/g, () => `$${++i}`), values: s.params });
  return s.all ? r.rows : r.rows[0];
}

async function readState(c: pg.PoolClient, n: PgNames): Promise<DatabaseState> {
  let rows: { key: string; value: string }[];
  try {
    rows = (await c.query<{ key: string; value: string }>(`SELECT key, value FROM ${q(n.meta)}._svc_meta WHERE key IN ('schema', 'schemaVersion')`)).rows;
  } catch (err) {
    // Deleted (by another daemon on the same state) after the registry was read.
    if (pgCode(err) === '42P01') throw new AppError('data_not_found', 'The database was deleted.');
    throw err;
  }
  const m = new Map(rows.map((r) => [r.key, r.value]));
  if (!m.has('schema')) throw new AppError('data_unavailable', 'The database has no schema record.');
  return { schema: JSON.parse(m.get('schema')!) as SchemaDefT, schemaVersion: Number(m.get('schemaVersion')) };
}

async function writeState(c: pg.PoolClient, n: PgNames, s: DatabaseState): Promise<void> {
  const put = `INSERT INTO ${q(n.meta)}._svc_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
  await c.query(put, ['schema', JSON.stringify(s.schema)]);
  await c.query(put, ['schemaVersion', String(s.schemaVersion)]);
}

/** (table oid, attnum) → column type, for the columns whose values need decoding (json). */
async function columnTypes(c: pg.PoolClient, n: PgNames, schema: SchemaDefT): Promise<ColumnTypes> {
  const rows = (
    await c.query<{ oid: number; attnum: number; t: string; a: string }>(
      "SELECT c.oid::int AS oid, a.attnum::int AS attnum, c.relname AS t, a.attname AS a FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped",
      [n.schema],
    )
  ).rows;
  const out: ColumnTypes = new Map();
  for (const r of rows) {
    const t = Object.hasOwn(schema.tables, r.t) ? schema.tables[r.t]! : undefined;
    const type: ColumnType | undefined = t && Object.hasOwn(t.columns, r.a) ? t.columns[r.a]!.type : undefined;
    if (type) out.set(`${r.oid}:${r.attnum}`, type);
  }
  return out;
}

async function hasReturning(sql: string): Promise<boolean> {
  const tree = await parsePg(sql);
  const body = Object.values(tree.stmts?.[0]?.stmt ?? {})[0] as { returningList?: unknown[] } | undefined;
  return Boolean(body?.returningList?.length);
}

function sslOf(u: URL): pg.PoolConfig['ssl'] {
  const mode = u.searchParams.get('sslmode');
  if (!mode || mode === 'disable') return undefined;
  return mode === 'no-verify' || mode === 'require' || mode === 'prefer' ? { rejectUnauthorized: false } : true;
}
