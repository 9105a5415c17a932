import type Database from '../../db/sqlite.js';
import { AppError } from '../../kernel/errors.js';
import { shadowRefusal, type ShadowSchema } from './shadow.js';
import { sqlError } from './sqlite-errors.js';
import { firstKeyword } from './sql-tokens.js';

// Admission of caller SQL, in layers that each stand alone (and are tested alone):
//   1. gate: the first keyword (read the way SQLite's tokenizer reads it) must be a statement kind
//      the mode allows. It is the only layer in front of what SQLite does while *preparing* a
//      statement (a PRAGMA takes effect when it is prepared), so layer 2 comes before any prepare
//      on the real file.
//   2. shadow (shadow.ts): the statement is compiled first against an in-memory copy of the schema
//      in which the system columns and the rowid's names are generated columns. SQLite's own name
//      resolution refuses any write to them, whatever the spelling; the shadow's program goes
//      through layer 4's opcode check, so a PRAGMA, ATTACH or DETACH that got past the gate is
//      refused here, on a throwaway connection, before the real file compiles it.
//   3. mode: prepared on the real file (one statement only), SQLite says whether it writes
//      (sqlite3_stmt_readonly; src/db/node-sqlite.ts reads the same from the program).
//   4. program: the real file's EXPLAIN program. Forbidden opcodes (transactions, schema changes,
//      VACUUM, pragmas), virtual tables, denied functions (load_extension, and sqlite_attach /
//      sqlite_detach: ATTACH and DETACH are function calls in the program), and every b-tree it
//      opens, by root page, for reading (OpenRead) or writing (OpenWrite): root pages map to tables
//      through sqlite_schema, so no alias, view or CTE hides a table, and only schema 0 (this file).

export type Mode = 'read' | 'write';

/** Tables a key may read and write in this database: '*' = all of them. */
export interface TableGrants {
  read: '*' | string[];
  write: '*' | string[];
}

export interface Admitted {
  stmt: Database.Statement;
  reads: Set<string>;
  writes: Set<string>;
}

const READ_START = new Set(['SELECT', 'VALUES', 'WITH']);
const WRITE_START = new Set(['INSERT', 'REPLACE', 'UPDATE', 'DELETE', 'WITH']);
/**
 * Opcodes of things no caller statement may do, whatever its first word. Expire is what a PRAGMA
 * that sets a flag, an ATTACH, a DETACH and schema changes compile to; no query or DML has it.
 */
const FORBIDDEN_OPS = new Set([
  'AutoCommit',
  'Savepoint',
  'Vacuum',
  'ParseSchema',
  'CreateBtree',
  'Destroy',
  'DropTable',
  'DropIndex',
  'DropTrigger',
  'SqlExec',
  'JournalMode',
  'IncrVacuum',
  'VCreate',
  'VDestroy',
  'LoadAnalysis',
  'Pagecount',
  'MaxPgcnt',
  'IntegrityCk',
  'Checkpoint',
  'Expire',
  'SetCookie',
]);
const VIRTUAL_OPS = new Set(['VOpen', 'VFilter', 'VUpdate', 'VBegin', 'VRename', 'VColumn', 'VNext']);
const FUNCTION_OPS = new Set(['Function', 'PureFunc', 'AggStep', 'AggFinal', 'AggInverse', 'AggValue']);
const DENIED_FUNCTIONS = /^(load_extension|readfile|writefile|edit|fts3_tokenizer|sqlite_dbpage|sqlite_attach|sqlite_detach)\b/i;

const refuse = (message: string): AppError => new AppError('data_invalid', message, { details: [{ path: 'body.sql', message }] });

export interface ExplainRow {
  opcode: string;
  p1: number;
  p2: number;
  p3: number;
  p4: string | null;
}

/** Layer 1: the statement kinds a mode admits, by the first keyword past whitespace and comments. */
export function gate(sql: string, mode: Mode): void {
  // SQLite reads a NUL as the end of the statement: what follows would be silently dropped.
  if (sql.includes('\u0000')) throw refuse('The SQL contains a NUL character.');
  const kw = firstKeyword(sql);
  if (!kw) throw refuse('The SQL has no statement.');
  const allowed = mode === 'read' ? READ_START : WRITE_START;
  if (allowed.has(kw)) return;
  if (mode === 'read' && WRITE_START.has(kw)) throw refuse(`${kw} writes; send it with mode "write".`);
  if (mode === 'write' && READ_START.has(kw)) throw refuse('A SELECT does not write; send it with mode "read" (the default).');
  if (['CREATE', 'DROP', 'ALTER'].includes(kw)) throw refuse(`${kw} is a schema change; schema changes go through POST /api/v1/data/{resource}/migrations.`);
  throw refuse(`${kw} is not allowed here; ${mode} mode takes ${[...allowed].join(', ')} statements.`);
}

const NAME_THE_COLUMNS = 'Name the columns of an INSERT (INSERT INTO t (a, b) ...); system columns are written by the server.';

/** Layer 2: compiles on the shadow schema; a write to a system column or a rowid is refused there. */
export function checkShadow(shadow: ShadowSchema, sql: string, params: unknown[]): void {
  try {
    shadow.compile(sql, params, (program) => checkOps(program as ExplainRow[]));
  } catch (err) {
    if (err instanceof AppError) throw err;
    const why = shadowRefusal((err as Error)?.message ?? '');
    if (why?.kind === 'system') throw refuse(`${why.column} is a system column written only by the server.`);
    if (why?.kind === 'rowid') throw refuse(`${why.column} is the row's rowid, which no statement may set: paging relies on rowids never changing.`);
    if (why?.kind === 'values') throw refuse(NAME_THE_COLUMNS);
    // Anything else (a syntax error, an unknown table): the real file's compile gives the answer.
  }
}

/** Layer 3: whether the prepared statement writes must agree with the mode. */
export function checkMode(stmt: Database.Statement, mode: Mode): void {
  if (mode === 'read' && !stmt.readonly) throw refuse('The statement writes; read mode runs only statements that cannot write (send it with mode "write").');
  if (mode === 'write' && stmt.readonly) throw refuse('The statement does not write; send it with mode "read" (the default).');
}

/** Layer 4a: nothing in the compiled program that caller SQL may not do. */
export function checkOps(program: readonly ExplainRow[]): void {
  for (const op of program) {
    if (FORBIDDEN_OPS.has(op.opcode)) throw refuse('The statement does something caller SQL may not (transactions, schema changes, VACUUM, PRAGMA, ATTACH, DETACH).');
    if (VIRTUAL_OPS.has(op.opcode)) throw refuse('Virtual tables (json_each, pragma_* and the like) are not available to caller SQL.');
    if (FUNCTION_OPS.has(op.opcode) && op.p4 && DENIED_FUNCTIONS.test(op.p4)) throw refuse(`The function ${op.p4.replace(/\(.*$/, '')}() is not available.`);
  }
}

/**
 * Layer 4b: the tables the program reads and writes, by the root pages it opens (`roots`: root page
 * → table, from this file's sqlite_schema); only this file's, and only the schema's own tables.
 */
export function programTables(program: readonly ExplainRow[], roots: ReadonlyMap<number, string>, tables: ReadonlySet<string>): { reads: Set<string>; writes: Set<string> } {
  const reads = new Set<string>();
  const writes = new Set<string>();
  for (const op of program) {
    // Clear (DELETE without WHERE) names its b-tree in p1 and its database in p2.
    const opens = op.opcode === 'OpenRead' || op.opcode === 'OpenWrite' || op.opcode === 'ReopenIdx';
    if (!opens && op.opcode !== 'Clear') continue;
    const [root, schemaNo] = opens ? [op.p2, op.p3] : [op.p1, op.p2];
    if (schemaNo !== 0) throw refuse('The statement may use only this database.');
    const table = root === 1 ? 'sqlite_schema' : roots.get(root);
    if (!table || !tables.has(table)) {
      if (table?.startsWith('sqlite_')) throw refuse(`${table} is internal to SQLite and not available to caller SQL.`);
      throw new AppError('data_not_found', 'The statement uses a table that is not in this database.');
    }
    (op.opcode === 'OpenRead' || op.opcode === 'ReopenIdx' ? reads : writes).add(table);
  }
  for (const t of writes) reads.delete(t);
  return { reads, writes };
}

/** Prepares `sql` through every layer and checks it against the mode, the schema's tables and the key's grants. */
export function admit(db: Database.Database, shadow: ShadowSchema, sql: string, params: unknown[], mode: Mode, tables: ReadonlySet<string>, grants: TableGrants): Admitted {
  gate(sql, mode);
  checkShadow(shadow, sql, params);
  let stmt: Database.Statement;
  let program: ExplainRow[];
  try {
    stmt = db.prepare(sql);
    // EXPLAIN needs the statement's parameters bound; it compiles, it does not run.
    program = db.prepare(`EXPLAIN ${sql}`).all(...params) as ExplainRow[];
  } catch (err) {
    const message = (err as Error)?.message ?? '';
    if (/more than one statement/.test(message)) throw refuse('Send one statement per request.');
    if (shadowRefusal(message)?.kind === 'values') throw refuse(NAME_THE_COLUMNS);
    throw sqlError(err);
  }
  checkMode(stmt, mode);
  checkOps(program);
  const roots = new Map<number, string>();
  for (const r of db.prepare("SELECT tbl_name, rootpage FROM sqlite_schema WHERE type IN ('table', 'index') AND rootpage > 0").all() as { tbl_name: string; rootpage: number }[]) {
    roots.set(r.rootpage, r.tbl_name);
  }
  const { reads, writes } = programTables(program, roots, tables);
  checkGrants(reads, writes, grants);
  return { stmt, reads, writes };
}

export function checkGrants(reads: Set<string>, writes: Set<string>, grants: TableGrants): void {
  const has = (list: '*' | string[], t: string) => list === '*' || list.includes(t);
  for (const t of writes) if (!has(grants.write, t)) throw new AppError('data_forbidden', `This key may not write table ${t}.`);
  for (const t of reads) if (!has(grants.read, t)) throw new AppError('data_forbidden', `This key may not read table ${t}.`);
}
