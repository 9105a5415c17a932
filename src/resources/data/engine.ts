import Database from '../../db/sqlite.js';
import { closeSync, existsSync, openSync } from 'node:fs';
import { AppError } from '../../kernel/errors.js';
import { monotonic, type Clock } from '../../lib/clock.js';
import { nowIso } from '../../lib/time.js';
import type { DatabaseState, QueryRequest } from './backend.js';
import { planBatch, runBatch } from './batch.js';
import { createTableSql, q, SchemaError, TIMESTAMP_TRIGGER, timestampTriggerSql } from './ddl.js';
import { IDEMPOTENCY_DDL, remember, replayOf, type IdempotencyRef } from './idempotency.js';
import { planMigration } from './migrations.js';
import { LIMITS, type MigrationInT, type MigrationRecord, type OperationT, type QueryResult, type RecordResultT, type SchemaDefT } from './schema.js';
import { ShadowSchema } from './shadow.js';
import { admit, checkGrants, type Admitted } from './sql-guard.js';
import { sqlError } from './sqlite-errors.js';
import { decode, encode, ValueError } from './values.js';

// One application database file, opened by the child process that serves it. Everything that
// touches the file goes through here: batches, caller SQL, migrations, idempotency records.

const INTERNAL_DDL = `
  CREATE TABLE IF NOT EXISTS _svc_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
  CREATE TABLE IF NOT EXISTS _svc_migrations (
    id TEXT PRIMARY KEY,
    checksum TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    applied_at TEXT NOT NULL,
    answer TEXT NOT NULL
  ) STRICT;
  ${IDEMPOTENCY_DDL}
`;

/**
 * Memory SQLite may use for one connection. In force only where SQLite keeps memory statistics;
 * neither node:sqlite's build nor better-sqlite3's does, and there the worker's RLIMIT_DATA
 * (worker-process.ts) is the limit.
 */
const HEAP_LIMIT_BYTES = 256 * 1024 * 1024;

export type FileState = DatabaseState;

export interface Answer<T> {
  answer: T;
  replayed: boolean;
  /** The answer serialised by `encode`, when the file has one. */
  json?: Uint8Array;
}

export type { QueryRequest } from './backend.js';

/** A statement's result columns, read once at admission: names, and types where a column is a table's. */
interface Shape {
  names: string[];
  types: (string | undefined)[];
}

export class DataFile {
  private readonly db: Database.Database;
  private readonly cache = new Map<string, Database.Statement>();
  private readonly admissions = new Map<string, Admitted & Shape>();
  private state!: FileState;
  /** Where caller SQL is compiled first (sql-guard.ts); made on the first admission of a schema version. */
  private shadow: ShadowSchema | null = null;
  /**
   * When the request being served must be done (monotonic(); set by the worker from the time limit). A write
   * that gets to its commit later rolls back instead: the daemon kills the worker a little after
   * this moment, and a write it answers 503 must not have been kept.
   */
  deadline = Infinity;
  /**
   * Serialises an answer (the worker sets it). Called inside a write's transaction, before its
   * commit: if the process runs out of memory there, nothing was kept, as its 413 says.
   */
  encode: ((answer: unknown) => Uint8Array) | null = null;

  /**
   * `clock` is the daemon's: what stamps rows, records migrations and keeps and expires idempotency
   * keys (in the worker, the time the daemon sent with the request being served).
   */
  constructor(
    file: string,
    private readonly clock: Pick<Clock, 'now'>,
    create?: SchemaDefT,
  ) {
    if (create) {
      if (existsSync(file)) throw new Error('database file already exists');
      closeSync(openSync(file, 'wx', 0o600));
    } else if (!existsSync(file)) {
      throw new AppError('data_unavailable', 'The database file is missing.');
    }
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 2000');
    this.db.pragma(`hard_heap_limit = ${HEAP_LIMIT_BYTES}`);
    this.db.exec(INTERNAL_DDL);
    if (create) {
      this.db.transaction(() => {
        for (const [t, def] of Object.entries(create.tables)) for (const sql of createTableSql(t, def)) this.db.exec(sql);
        this.createTimestampTriggers(create);
        this.markTimestampsGuarded();
        this.writeState({ schema: create, schemaVersion: 1 });
      })();
    }
    this.state = this.readState();
    this.guardTimestamps();
  }

  info(): FileState {
    return this.state;
  }

  close(): void {
    this.shadow?.close();
    try {
      this.db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      this.db.close();
    }
  }

  private prepare = (sql: string): Database.Statement => {
    let s = this.cache.get(sql);
    if (!s) {
      if (this.cache.size > 500) this.cache.clear();
      this.cache.set(sql, (s = this.db.prepare(sql)));
    }
    return s;
  };

  private readState(): FileState {
    const rows = this.db.prepare("SELECT key, value FROM _svc_meta WHERE key IN ('schema', 'schemaVersion')").all() as { key: string; value: string }[];
    const m = new Map(rows.map((r) => [r.key, r.value]));
    if (!m.has('schema')) throw new AppError('data_unavailable', 'The database file has no schema record.');
    return { schema: JSON.parse(m.get('schema')!) as SchemaDefT, schemaVersion: Number(m.get('schemaVersion')) };
  }

  private writeState(s: FileState): void {
    const put = this.db.prepare('INSERT INTO _svc_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
    put.run('schema', JSON.stringify(s.schema));
    put.run('schemaVersion', String(s.schemaVersion));
  }

  /**
   * A file made before timestamp columns had their triggers (ddl.ts) gets them the first time it
   * is opened, and its stored values are brought to the one spelling the batch path writes, so
   * that SQL comparisons on old rows are right too. A value is converted with the batch path's own
   * encode(): only text that names its zone is, since an instant without one cannot be known.
   * A value that cannot be converted (no zone, not a date) or whose conversion would break a
   * unique constraint or a reference is left as it is; docs/data.md says how to find those.
   * Converted rows get a new `_version`, as every change does.
   */
  private guardTimestamps(): void {
    if (this.db.prepare("SELECT 1 FROM _svc_meta WHERE key = 'timestampTriggers'").get()) return;
    this.db.transaction(() => {
      for (const [t, def] of Object.entries(this.state.schema.tables)) {
        for (const [c, col] of Object.entries(def.columns)) {
          if (col.type !== 'timestamp') continue;
          const odd = this.db.prepare(`SELECT rowid AS r, ${q(c)} AS v FROM ${q(t)} WHERE ${q(c)} IS NOT strftime('%Y-%m-%dT%H:%M:%fZ', ${q(c)}, '+0 seconds')`).all() as { r: number; v: unknown }[];
          const set = this.db.prepare(`UPDATE ${q(t)} SET ${q(c)} = ? WHERE rowid = ?`);
          for (const { r, v } of odd) {
            let utc;
            try {
              utc = encode('timestamp', v);
            } catch (err) {
              if (err instanceof ValueError) continue;
              throw err;
            }
            try {
              set.run(utc, r);
            } catch (err) {
              if (!String((err as { code?: unknown }).code).startsWith('SQLITE_CONSTRAINT')) throw err;
            }
          }
        }
      }
      this.dropTimestampTriggers();
      this.createTimestampTriggers(this.state.schema);
      this.markTimestampsGuarded();
    })();
  }

  private markTimestampsGuarded(): void {
    this.db.prepare("INSERT INTO _svc_meta (key, value) VALUES ('timestampTriggers', '1') ON CONFLICT (key) DO NOTHING").run();
  }

  private dropTimestampTriggers(): void {
    const names = this.db.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND substr(name, 1, ?) = ?").pluck().all(TIMESTAMP_TRIGGER.length, TIMESTAMP_TRIGGER) as string[];
    for (const n of names) this.db.exec(`DROP TRIGGER ${q(n)}`);
  }

  private createTimestampTriggers(schema: SchemaDefT): void {
    for (const sql of timestampTriggerSql(schema)) this.db.exec(sql);
  }

  /** Runs `fn` in one transaction with the idempotency record of `ref` (if any) written in it too. */
  private once<T>(ref: IdempotencyRef | undefined, fn: () => T, write: boolean): Answer<T> {
    // A lone read needs no transaction of its own (one statement is atomic); writes and anything
    // with an idempotency record do.
    const encoded = (answer: T, replayed: boolean): Answer<T> => (this.encode ? { answer, replayed, json: this.encode(answer) } : { answer, replayed });
    if (!ref && !write) return encoded(fn(), false);
    return this.db.transaction((): Answer<T> => {
      if (ref) {
        const stored = replayOf(this.db, ref, this.clock.now());
        if (stored !== undefined) return encoded(stored as T, true);
      }
      const answer = fn();
      if (ref) remember(this.db, ref, answer, this.clock.now());
      const out = encoded(answer, false);
      this.beforeCommit();
      return out;
    })();
  }

  private beforeCommit(): void {
    if (monotonic() > this.deadline) throw new AppError('data_unavailable', 'The request ran past data.statementTimeoutMs and was rolled back; nothing it did was kept.');
  }

  batch(ops: OperationT[], ref?: IdempotencyRef): Answer<RecordResultT[]> {
    // Planned against the schema before the transaction starts: a bad batch writes nothing.
    const plans = planBatch(this.state.schema, ops);
    return this.once(ref, () => runBatch(this.prepare, this.state.schema, plans, nowIso(this.clock)), true);
  }

  query(req: QueryRequest, ref?: IdempotencyRef): Answer<QueryResult> {
    const params = req.params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p));
    const { stmt, ...shape } = this.admitted(req, params);
    try {
      if (req.mode === 'read') return this.once(ref, () => this.collect(stmt, params, req.maxRows, shape, null), false);
      return this.once(
        ref,
        () => {
          this.db.pragma('defer_foreign_keys = ON');
          let result: QueryResult;
          if (stmt.reader) {
            result = this.collect(stmt, params, req.maxRows, shape, 'all');
          } else {
            const info = stmt.run(...params);
            result = { rows: [], rowCount: info.changes, truncated: false };
          }
          this.checkForeignKeys();
          return result;
        },
        true,
      );
    } catch (err) {
      throw sqlError(err);
    }
  }

  /**
   * Admission is decided once per (mode, SQL) and schema version: the same text compiles to the
   * same program, whatever its parameters. Grants are checked on every call (they change with
   * the config), against the tables the program was found to read and write.
   */
  private admitted(req: QueryRequest, params: unknown[]): { stmt: Database.Statement } & Shape {
    const key = `${req.mode}\u0000${req.sql}`;
    let hit = this.admissions.get(key);
    if (!hit) {
      this.shadow ??= new ShadowSchema(this.state.schema);
      const a = admit(this.db, this.shadow, req.sql, params, req.mode, new Set(Object.keys(this.state.schema.tables)), { read: '*', write: '*' });
      // Integers as BigInts: decode() answers one past 2^53 as its exact decimal text, as the
      // PostgreSQL provider does (node:sqlite would refuse to read it, better-sqlite3 round it).
      if (a.stmt.reader) a.stmt.safeIntegers(true);
      hit = { ...a, names: a.stmt.reader ? a.stmt.columns().map((c) => c.name) : [], types: this.columnTypes(a.stmt) };
      if (this.admissions.size >= 200) this.admissions.delete(this.admissions.keys().next().value!);
      this.admissions.set(key, hit);
    }
    checkGrants(hit.reads, hit.writes, req.grants);
    return hit;
  }

  /** Rows of a statement, at most maxRows of them and at most 1 MiB; `all` drains a RETURNING write. */
  private collect(stmt: Database.Statement, params: unknown[], maxRows: number, { names, types }: Shape, all: 'all' | null): QueryResult {
    const rows: Record<string, unknown>[] = [];
    let bytes = 0;
    let seen = 0;
    let truncated = false;
    for (const raw of stmt.raw(true).iterate(...params) as IterableIterator<unknown[]>) {
      seen++;
      if (rows.length >= maxRows) {
        truncated = true;
        if (!all) break;
        continue;
      }
      // Without a prototype: a column named __proto__ (SELECT 1 AS __proto__) is a column like any other.
      const row: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
      for (let i = 0; i < raw.length; i++) row[names[i]!] = decode(types[i] as never, raw[i]);
      bytes += JSON.stringify(row).length;
      if (bytes > LIMITS.resultBytes) throw new AppError('data_limit', `The result exceeds ${LIMITS.resultBytes / 1048576} MiB; select fewer rows or columns (maxRows).`);
      rows.push(row);
    }
    return { rows, rowCount: all ? seen : rows.length, truncated };
  }

  /** Column types of a statement's result columns that come straight from a table column. */
  private columnTypes(stmt: Database.Statement): (string | undefined)[] {
    if (!stmt.reader) return [];
    return stmt.columns().map((c) => {
      if (!c.table || !c.column) return undefined;
      const t = Object.hasOwn(this.state.schema.tables, c.table) ? this.state.schema.tables[c.table] : undefined;
      return t && Object.hasOwn(t.columns, c.column) ? t.columns[c.column]!.type : undefined;
    });
  }

  private checkForeignKeys(): void {
    const bad = this.db.prepare('PRAGMA foreign_key_check').get() as { table: string; fkid: number } | undefined;
    if (!bad) return;
    const fk = (this.db.prepare(`PRAGMA foreign_key_list("${bad.table.replace(/"/g, '""')}")`).all() as { id: number; from: string; table: string; to: string }[]).find((f) => f.id === bad.fkid);
    const column = fk?.from ?? null;
    const message = fk ? `references ${fk.table}.${fk.to}, and no row there has that value` : 'a foreign key constraint failed';
    throw new AppError('data_constraint', `${column ? `${column}: ` : ''}${message}.`, column ? { details: [{ path: column, message }] } : {});
  }

  migrate(m: MigrationInT, checksum: string): Answer<FileState & { record: MigrationRecord }> {
    return this.db.transaction((): Answer<FileState & { record: MigrationRecord }> => {
      const prev = this.db.prepare('SELECT checksum, answer FROM _svc_migrations WHERE id = ?').get(m.id) as { checksum: string; answer: string } | undefined;
      if (prev) {
        if (prev.checksum !== checksum)
          throw new AppError('data_conflict', `Migration ${m.id} was already applied with other content; give a new migration a new id.`, {
            details: [{ path: 'body.id', message: 'already applied with other content' }],
          });
        return { answer: JSON.parse(prev.answer), replayed: true };
      }
      if (m.expectedVersion !== this.state.schemaVersion) {
        throw new AppError('data_conflict', `The database is at schemaVersion ${this.state.schemaVersion}, not ${m.expectedVersion}.`, {
          details: [{ path: 'body.expectedVersion', message: `the database is at ${this.state.schemaVersion}` }],
        });
      }
      const plan = planMigration(this.state.schema, m);
      try {
        // The triggers name their columns: SQLite refuses to drop a column a trigger uses, and a
        // renamed column would keep a trigger named after its old name. They are made again for
        // the new schema, in the same transaction.
        this.dropTimestampTriggers();
        for (const sql of plan.ddl) this.db.exec(sql);
        this.createTimestampTriggers(plan.schema);
      } catch (err) {
        const e = sqlError(err);
        throw new AppError(e.code === 'data_invalid' ? 'data_conflict' : e.code, `The migration cannot be applied to the current data: ${e.message}`);
      }
      const next: FileState = { schema: plan.schema, schemaVersion: this.state.schemaVersion + 1 };
      const record: MigrationRecord = { id: m.id, checksum, schemaVersion: next.schemaVersion, appliedAt: nowIso(this.clock) };
      this.writeState(next);
      const answer = { ...next, record };
      this.db
        .prepare('INSERT INTO _svc_migrations (id, checksum, schema_version, applied_at, answer) VALUES (?, ?, ?, ?, ?)')
        .run(m.id, checksum, next.schemaVersion, record.appliedAt, JSON.stringify(answer));
      this.beforeCommit();
      this.state = next;
      this.cache.clear();
      this.admissions.clear();
      this.shadow?.close();
      this.shadow = null;
      return { answer, replayed: false };
    })();
  }

  migrations(): MigrationRecord[] {
    return (
      this.db.prepare('SELECT id, checksum, schema_version, applied_at FROM _svc_migrations ORDER BY schema_version').all() as {
        id: string;
        checksum: string;
        schema_version: number;
        applied_at: string;
      }[]
    ).map((r) => ({
      id: r.id,
      checksum: r.checksum,
      schemaVersion: r.schema_version,
      appliedAt: r.applied_at,
    }));
  }
}

export { SchemaError };
