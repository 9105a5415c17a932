import type Database from '../../db/sqlite.js';
import { AppError, type ErrorCode } from '../../kernel/errors.js';
import { uuidv7 } from '../../lib/ids.js';
import { q, SQLITE, type Dialect } from './dialect.js';
import { compileList, FilterError, type CompiledList } from './filter.js';
import { LIMITS, SYSTEM_COLUMNS, type OperationT, type RecordResultT, type SchemaDefT, type TableDefT } from './schema.js';
import { encode, ValueError, type SqlValue } from './values.js';

// Record batches: every operation is checked against the schema before anything is written
// (plan), then all of them run inside one transaction (run). A failure names the index of the
// operation and the field; the caller's transaction rolls the whole batch back.
//
// The run is one generator for every provider: it yields the statements it needs (SQL with `?`
// placeholders) and is handed their rows back, so SQLite drives it synchronously (runBatch) and
// PostgreSQL over its async driver (driveAsync, from pg/backend.ts), with the dialect saying what differs.

type Row = Record<string, SqlValue>;

export type Plan =
  | { op: 'list'; table: string; def: TableDefT; compiled: CompiledList; limit: number; offset: number }
  | { op: 'get'; table: string; def: TableDefT; id: string }
  | { op: 'insert'; table: string; def: TableDefT; rows: Row[]; rowsKey: 'values' | 'rows' }
  | { op: 'upsert'; table: string; def: TableDefT; values: Row; onConflict: string[] }
  | { op: 'update'; table: string; def: TableDefT; id: string; expectedVersion?: number; values: Row }
  | { op: 'delete'; table: string; def: TableDefT; id: string; expectedVersion?: number };

const WRITES = new Set(['insert', 'upsert', 'update', 'delete']);
export const isWriteOp = (op: OperationT): boolean => WRITES.has(op.op);

/** An error about operation `index`, at `field` below it (values.email, filter.age.gt). */
export function opError(code: ErrorCode, index: number, op: { op: string; table: string }, field: string | null, message: string): AppError {
  const where = `operations[${index}] (${op.op} ${op.table})`;
  const path = `body.operations.${index}${field ? `.${field}` : ''}`;
  return new AppError(code, `${where}${field ? `: ${field.split('.').pop()}` : ''}: ${message}.`, { details: [{ path, message }] });
}

function tableOf(schema: SchemaDefT, op: OperationT, index: number): TableDefT {
  const def = Object.hasOwn(schema.tables, op.table) ? schema.tables[op.table] : undefined;
  if (!def) throw opError('data_not_found', index, op, 'table', `there is no table ${op.table}`);
  return def;
}

function encodeValues(def: TableDefT, values: Record<string, unknown>, index: number, op: OperationT, base: string, insert: boolean): Row {
  const row: Row = {};
  for (const [k, v] of Object.entries(values)) {
    const field = `${base}.${k}`;
    if ((SYSTEM_COLUMNS as readonly string[]).includes(k)) throw opError('data_invalid', index, op, field, `${k} is a system column written only by the server`);
    const col = Object.hasOwn(def.columns, k) ? def.columns[k] : undefined;
    if (!col) throw opError('data_invalid', index, op, field, `table ${op.table} has no column ${k}`);
    if (v === null && !col.nullable) throw opError('data_constraint', index, op, field, 'must not be null');
    try {
      row[k] = encode(col.type, v);
    } catch (err) {
      if (err instanceof ValueError) throw opError('data_invalid', index, op, field, err.message);
      throw err;
    }
  }
  if (insert) {
    for (const [k, col] of Object.entries(def.columns)) {
      if (!Object.hasOwn(row, k) && !col.nullable && col.default === undefined) throw opError('data_constraint', index, op, `${base}.${k}`, 'is required');
    }
  }
  return row;
}

/** Does a unique column or unique index cover exactly these columns (an upsert's conflict target)? */
function isUniqueTarget(def: TableDefT, cols: string[]): boolean {
  const set = [...new Set(cols)].sort().join(',');
  if (set === '_id') return true;
  if (cols.length === 1 && def.columns[cols[0]!]?.unique) return true;
  return (def.indexes ?? []).some((ix) => ix.unique && [...ix.columns].sort().join(',') === set);
}

/** Validates the whole batch against the schema; nothing is read or written yet. */
export function planBatch(schema: SchemaDefT, ops: OperationT[], d: Dialect = SQLITE): Plan[] {
  return ops.map((op, i): Plan => {
    const def = tableOf(schema, op, i);
    switch (op.op) {
      case 'list':
        try {
          return { op: 'list', table: op.table, def, compiled: compileList(op.table, def, op.filter, op.orderBy, d), limit: op.limit ?? 50, offset: op.offset ?? 0 };
        } catch (err) {
          if (err instanceof FilterError) throw opError('data_invalid', i, op, err.path, err.message);
          throw err;
        }
      case 'get':
        return { op: 'get', table: op.table, def, id: op.id };
      case 'insert': {
        if ((op.values === undefined) === (op.rows === undefined)) throw opError('data_invalid', i, op, null, 'give exactly one of values or rows');
        const rows = op.rows ? op.rows.map((r, j) => encodeValues(def, r, i, op, `rows.${j}`, true)) : [encodeValues(def, op.values!, i, op, 'values', true)];
        return { op: 'insert', table: op.table, def, rows, rowsKey: op.rows ? 'rows' : 'values' };
      }
      case 'upsert': {
        op.onConflict.forEach((c, j) => {
          if (c !== '_id' && !Object.hasOwn(def.columns, c)) throw opError('data_invalid', i, op, `onConflict.${j}`, `table ${op.table} has no column ${c}`);
          if (c !== '_id' && !Object.hasOwn(op.values, c)) throw opError('data_invalid', i, op, `values.${c}`, `is named in onConflict, so it must be given`);
        });
        if (op.onConflict.includes('_id')) throw opError('data_invalid', i, op, 'onConflict', 'use update to change a row by _id; onConflict names unique columns');
        if (!isUniqueTarget(def, op.onConflict)) throw opError('data_invalid', i, op, 'onConflict', 'must name a unique column or the columns of a unique index');
        return { op: 'upsert', table: op.table, def, values: encodeValues(def, op.values, i, op, 'values', true), onConflict: op.onConflict };
      }
      case 'update': {
        if (!Object.keys(op.values).length) throw opError('data_invalid', i, op, 'values', 'give at least one column to change');
        return { op: 'update', table: op.table, def, id: op.id, expectedVersion: op.expectedVersion, values: encodeValues(def, op.values, i, op, 'values', false) };
      }
      case 'delete':
        return { op: 'delete', table: op.table, def, id: op.id, expectedVersion: op.expectedVersion };
    }
  });
}

/** A statement the batch needs: all its rows, or the first (undefined when none). */
export interface Step {
  sql: string;
  params: SqlValue[];
  all: boolean;
}
type Gen<T> = Generator<Step, T, unknown>;
type DbRow = Record<string, unknown>;

function* all(sql: string, params: SqlValue[]): Gen<DbRow[]> {
  return (yield { sql, params, all: true }) as DbRow[];
}
function* first(sql: string, params: SqlValue[]): Gen<DbRow | undefined> {
  return (yield { sql, params, all: false }) as DbRow | undefined;
}

/** Runs a step generator with a synchronous executor; a thrown error is thrown into the generator. */
export function driveSync<T>(gen: Gen<T>, exec: (s: Step) => unknown): T {
  let r = gen.next();
  while (!r.done) {
    let v: unknown;
    try {
      v = exec(r.value);
    } catch (err) {
      r = gen.throw(err);
      continue;
    }
    r = gen.next(v);
  }
  return r.value;
}

/** The same over an async executor (one statement at a time, in order). */
export async function driveAsync<T>(gen: Gen<T>, exec: (s: Step) => Promise<unknown>): Promise<T> {
  let r = gen.next();
  while (!r.done) {
    let v: unknown;
    try {
      v = await exec(r.value);
    } catch (err) {
      r = gen.throw(err);
      continue;
    }
    r = gen.next(v);
  }
  return r.value;
}

export type Prepare = (sql: string) => Database.Statement;

/**
 * Runs planned operations on SQLite; the caller holds the transaction. Throws an AppError naming
 * the operation that failed. `now` (the daemon's clock, ISO) stamps the rows written.
 */
export function runBatch(prepare: Prepare, schema: SchemaDefT, plans: Plan[], now: string): RecordResultT[] {
  return driveSync(batchSteps(SQLITE, schema, plans, now), (s) => (s.all ? prepare(s.sql).all(...s.params) : prepare(s.sql).get(...s.params)));
}

/** The batch as statements, for any dialect; the caller holds the transaction. `now` stamps rows where the batch writes the stamps. */
export function* batchSteps(d: Dialect, schema: SchemaDefT, plans: Plan[], now: string): Gen<RecordResultT[]> {
  let bytes = 0;
  const results: RecordResultT[] = [];
  for (const [i, p] of plans.entries()) {
    const r = yield* runOne(d, schema, p, i, now);
    // Rows a write returns are the rows the request sent (bounded by the body limit); reads are
    // what can grow, so only they are measured.
    if (p.op === 'list' || p.op === 'get') for (const row of r.rows) bytes += JSON.stringify(row).length;
    if (bytes > LIMITS.batchResultBytes) throw opError('data_limit', i, p, null, `the batch's results exceed ${LIMITS.batchResultBytes / 1048576} MiB; list fewer rows`);
    results.push(r);
  }
  return results;
}

const one = (d: Dialect, def: TableDefT, row: DbRow | undefined): RecordResultT => (row ? { rows: [d.decodeRow(def, row)], total: 1, nextOffset: null } : { rows: [], total: 0, nextOffset: null });

/** INSERT of `cols` (and, where the batch writes them, the system columns) returning the row. */
function insertSql(d: Dialect, t: string, cols: string[]): string {
  const all = [...(d.serverStamps ? [] : ['"_id"', '"_created_at"', '"_updated_at"']), ...cols.map(q)];
  if (!all.length) return `INSERT INTO ${t} DEFAULT VALUES`;
  return `INSERT INTO ${t} (${all.join(', ')}) VALUES (${all.map(() => '?').join(', ')})`;
}
const stamps = (d: Dialect, now: string): SqlValue[] => (d.serverStamps ? [] : [uuidv7(), now, now]);

function* runOne(d: Dialect, schema: SchemaDefT, p: Plan, i: number, now: string): Gen<RecordResultT> {
  const t = q(p.table);
  try {
    switch (p.op) {
      case 'list': {
        const { where, params, orderBy } = p.compiled;
        const rows = yield* all(`SELECT * FROM ${t} WHERE ${where} ORDER BY ${orderBy} LIMIT ? OFFSET ?`, [...params, p.limit, p.offset]);
        const total = Number((yield* first(`SELECT COUNT(*) AS n FROM ${t} WHERE ${where}`, params))!.n);
        const end = p.offset + rows.length;
        return { rows: rows.map((r) => d.decodeRow(p.def, r)), total, nextOffset: end < total && rows.length > 0 ? end : null };
      }
      case 'get':
        return one(d, p.def, yield* first(`SELECT * FROM ${t} WHERE "_id" = ?`, [p.id]));
      case 'insert': {
        const refs = hasReferences(p.def);
        // Over a network, one statement for all the rows (SQLite runs in-process: a row at a time
        // costs nothing there). A failure is found again row by row, to name the row.
        if (d.multiRowInsert && !refs && p.rows.length > 1) {
          const rows = yield* insertAll(d, t, p.rows);
          if (rows) return { rows: rows.map((r) => d.decodeRow(p.def, r)), total: rows.length, nextOffset: null };
        }
        const out: DbRow[] = [];
        for (const [j, row] of p.rows.entries()) {
          if (refs) yield* checkReferences(p.def, row, i, p, `${p.rowsKey === 'rows' ? `rows.${j}` : 'values'}`);
          const cols = Object.keys(row);
          try {
            out.push((yield* first(`${insertSql(d, t, cols)} RETURNING *`, [...stamps(d, now), ...cols.map((c) => row[c]!)]))!);
          } catch (err) {
            throw asConstraint(d, err, i, p, p.rowsKey === 'rows' ? `rows.${j}` : 'values');
          }
        }
        return { rows: out.map((r) => d.decodeRow(p.def, r)), total: out.length, nextOffset: null };
      }
      case 'upsert': {
        yield* checkReferences(p.def, p.values, i, p, 'values');
        const cols = Object.keys(p.values);
        const sets = cols.filter((c) => !p.onConflict.includes(c)).map((c) => `${q(c)} = excluded.${q(c)}`);
        if (!d.serverStamps) sets.push('"_version" = "_version" + 1', '"_updated_at" = excluded."_updated_at"');
        // The server's trigger bumps _version on any update: a no-op assignment makes one.
        else if (!sets.length) sets.push(`${q(p.onConflict[0]!)} = excluded.${q(p.onConflict[0]!)}`);
        const sql = `${insertSql(d, t, cols)} ON CONFLICT (${p.onConflict.map(q).join(', ')}) DO UPDATE SET ${sets.join(', ')} RETURNING *`;
        return one(d, p.def, yield* first(sql, [...stamps(d, now), ...cols.map((c) => p.values[c]!)]));
      }
      case 'update': {
        yield* checkReferences(p.def, p.values, i, p, 'values');
        const cols = Object.keys(p.values);
        const sets = cols.map((c) => `${q(c)} = ?`);
        if (!d.serverStamps) sets.push('"_version" = "_version" + 1', '"_updated_at" = ?');
        const cond = p.expectedVersion === undefined ? '' : ' AND "_version" = ?';
        const args = [...cols.map((c) => p.values[c]!), ...(d.serverStamps ? [] : [now]), p.id, ...(p.expectedVersion === undefined ? [] : [p.expectedVersion])];
        const row = yield* first(`UPDATE ${t} SET ${sets.join(', ')} WHERE "_id" = ?${cond} RETURNING *`, args);
        if (!row) throw yield* versionConflict(p, i);
        return one(d, p.def, row);
      }
      case 'delete': {
        const cond = p.expectedVersion === undefined ? '' : ' AND "_version" = ?';
        const row = yield* first(`DELETE FROM ${t} WHERE "_id" = ?${cond} RETURNING *`, [p.id, ...(p.expectedVersion === undefined ? [] : [p.expectedVersion])]);
        if (!row) throw yield* versionConflict(p, i);
        return one(d, p.def, row);
      }
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    // Where a failed statement aborts the transaction (Postgres), nothing more can be asked: the
    // batch is over (it rolls back), and the referrer is named from the error instead of looked up.
    const fk = p.op !== 'delete' ? null : d.abortsOnError ? (d.constraintColumn(err)?.referencedBy ?? null) : yield* referencedBy(schema, p.table, p.id);
    if (fk) throw opError('data_constraint', i, p, 'id', `the row is still referenced by ${fk}`);
    throw asConstraint(d, err, i, p, p.op === 'list' || p.op === 'get' || p.op === 'delete' ? null : 'values');
  }
}

/**
 * The rows in one INSERT per run of rows with the same columns, inside a savepoint; null (the
 * savepoint rolled back) when one of them fails, so that the caller can find which.
 */
function* insertAll(d: Dialect, t: string, rows: Row[]): Gen<DbRow[] | null> {
  yield* first('SAVEPOINT "_svc_insert"', []);
  const out: DbRow[] = [];
  try {
    for (let start = 0; start < rows.length; ) {
      const cols = Object.keys(rows[start]!);
      let end = start + 1;
      while (end < rows.length && Object.keys(rows[end]!).join('\u0000') === cols.join('\u0000')) end++;
      const run = rows.slice(start, end);
      if (!cols.length) {
        for (let k = 0; k < run.length; k++) out.push((yield* first(`${insertSql(d, t, [])} RETURNING *`, []))!);
      } else {
        const values = run.map(() => `(${cols.map(() => '?').join(', ')})`).join(', ');
        out.push(
          ...(yield* all(
            `INSERT INTO ${t} (${cols.map(q).join(', ')}) VALUES ${values} RETURNING *`,
            run.flatMap((r) => cols.map((c) => r[c]!)),
          )),
        );
      }
      start = end;
    }
  } catch (err) {
    if (!d.constraintColumn(err)) throw err;
    yield* first('ROLLBACK TO SAVEPOINT "_svc_insert"', []);
    return null;
  }
  yield* first('RELEASE SAVEPOINT "_svc_insert"', []);
  return out;
}

function* versionConflict(p: Extract<Plan, { id: string }>, i: number): Gen<AppError> {
  const cur = yield* first(`SELECT "_version" AS v FROM ${q(p.table)} WHERE "_id" = ?`, [p.id]);
  if (!cur) return opError('data_conflict', i, p, 'id', `there is no row with _id ${p.id}`);
  return opError('data_conflict', i, p, 'expectedVersion', `the row is at version ${Number(cur.v)}, not ${'expectedVersion' in p ? p.expectedVersion : '?'}`);
}

const hasReferences = (def: TableDefT): boolean => Object.values(def.columns).some((c) => c.references);

/** Foreign keys checked before the write, so that the failure can name the column. */
function* checkReferences(def: TableDefT, row: Row, i: number, p: Plan, base: string): Gen<void> {
  for (const [c, v] of Object.entries(row)) {
    const ref = def.columns[c]?.references;
    if (!ref || v === null) continue;
    if (!(yield* first(`SELECT 1 AS x FROM ${q(ref.table)} WHERE ${q(ref.column)} = ? LIMIT 1`, [v]))) {
      throw opError('data_constraint', i, p, `${base}.${c}`, `references ${ref.table}.${ref.column}, and no row there has that value`);
    }
  }
}

/** The first column that still references row `id` of `table` (for a refused delete). */
function* referencedBy(schema: SchemaDefT, table: string, id: string): Gen<string | null> {
  for (const [t, def] of Object.entries(schema.tables)) {
    for (const [c, col] of Object.entries(def.columns)) {
      const ref = col.references;
      if (!ref || ref.table !== table) continue;
      const hit = yield* first(`SELECT 1 AS x FROM ${q(t)} WHERE ${q(c)} = (SELECT ${q(ref.column)} FROM ${q(table)} WHERE "_id" = ?) LIMIT 1`, [id]);
      if (hit) return `${t}.${c}`;
    }
  }
  return null;
}

function asConstraint(d: Dialect, err: unknown, i: number, p: Plan, base: string | null): AppError {
  const c = d.constraintColumn(err);
  if (!c) throw err;
  const field = c.column ? (base ? `${base}.${c.column}` : c.column) : base;
  return opError('data_constraint', i, p, field, c.message);
}
