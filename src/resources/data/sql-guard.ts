import type Database from 'better-sqlite3';
import { AppError } from '../../kernel/errors.js';
import { SYSTEM_COLUMNS } from './schema.js';
import { sqlError } from './sqlite-errors.js';
import { assignedColumns, tokenize } from './sql-tokens.js';

// Admission of caller SQL. The decision rests on what SQLite itself compiled: the statement is
// prepared (one statement only), better-sqlite3 says whether it can write, and its EXPLAIN program
// lists every b-tree it opens, by root page, for reading (OpenRead) or writing (OpenWrite). Root
// pages map to tables through sqlite_schema, so no spelling, alias, view or CTE can hide a table.
// The first keyword (past comments) admits only the statement kinds a mode allows, and the tokens
// name the columns a write assigns (the program does not), so system columns stay the server's.

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
/** Opcodes of things no caller statement may do, whatever its first word. */
const FORBIDDEN_OPS = new Set(['AutoCommit', 'Savepoint', 'Vacuum', 'ParseSchema', 'CreateBtree', 'Destroy', 'DropTable', 'DropIndex', 'DropTrigger', 'SqlExec', 'JournalMode', 'IncrVacuum', 'VCreate', 'VDestroy', 'LoadAnalysis', 'Pagecount', 'MaxPgcnt', 'IntegrityCk', 'Checkpoint']);
const VIRTUAL_OPS = new Set(['VOpen', 'VFilter', 'VUpdate', 'VBegin', 'VRename', 'VColumn', 'VNext']);
const FUNCTION_OPS = new Set(['Function', 'PureFunc', 'AggStep', 'AggFinal', 'AggInverse', 'AggValue']);
const DENIED_FUNCTIONS = /^(load_extension|readfile|writefile|edit|fts3_tokenizer|sqlite_dbpage)\b/i;

const refuse = (message: string): AppError => new AppError('data_invalid', message);

interface ExplainRow {
  opcode: string;
  p1: number;
  p2: number;
  p3: number;
  p4: string | null;
}

/** Prepares `sql` and checks it against the mode, the database's tables and the key's grants. */
export function admit(db: Database.Database, sql: string, params: unknown[], mode: Mode, tables: ReadonlySet<string>, grants: TableGrants): Admitted {
  const tokens = tokenize(sql);
  const first = tokens[0];
  if (!first) throw refuse('The SQL has no statement.');
  const kw = first.kind === 'word' ? first.value : '';
  const allowed = mode === 'read' ? READ_START : WRITE_START;
  if (!allowed.has(kw)) {
    if (mode === 'read' && (WRITE_START.has(kw) || kw === 'REPLACE')) throw refuse(`${kw} writes; send it with mode "write".`);
    if (mode === 'write' && READ_START.has(kw)) throw refuse('A SELECT does not write; send it with mode "read" (the default).');
    if (['CREATE', 'DROP', 'ALTER'].includes(kw)) throw refuse(`${kw} is a schema change; schema changes go through POST /api/v1/data/{resource}/migrations.`);
    throw refuse(`${kw || 'This statement'} is not allowed here; ${mode} mode takes ${[...allowed].join(', ')} statements.`);
  }

  let stmt: Database.Statement;
  try {
    stmt = db.prepare(sql);
  } catch (err) {
    if (/more than one statement/.test((err as Error).message)) throw refuse('Send one statement per request.');
    throw sqlError(err);
  }
  if (mode === 'read' && !stmt.readonly) throw refuse('The statement writes; read mode runs only statements that cannot write (send it with mode "write").');
  if (mode === 'write' && stmt.readonly) throw refuse('The statement does not write; send it with mode "read" (the default).');

  if (mode === 'write') {
    const { columns, insertWithoutColumns } = assignedColumns(tokens);
    const system = columns.find((c) => (SYSTEM_COLUMNS as readonly string[]).includes(c.toLowerCase()));
    if (system) throw refuse(`${system} is a system column written only by the server.`);
    if (insertWithoutColumns) throw refuse('Name the columns of an INSERT (INSERT INTO t (a, b) ...); system columns are written by the server.');
  }

  const roots = new Map<number, string>();
  for (const r of db.prepare("SELECT tbl_name, rootpage FROM sqlite_schema WHERE type IN ('table', 'index') AND rootpage > 0").all() as { tbl_name: string; rootpage: number }[]) {
    roots.set(r.rootpage, r.tbl_name);
  }
  const reads = new Set<string>();
  const writes = new Set<string>();
  let program: ExplainRow[];
  try {
    // EXPLAIN needs the statement's parameters bound; it compiles, it does not run.
    program = db.prepare(`EXPLAIN ${sql}`).all(...params) as ExplainRow[];
  } catch (err) {
    throw sqlError(err);
  }
  for (const op of program) {
    if (FORBIDDEN_OPS.has(op.opcode)) throw refuse('The statement does something caller SQL may not (transactions, schema changes, VACUUM, PRAGMA).');
    if (VIRTUAL_OPS.has(op.opcode)) throw refuse('Virtual tables (json_each, pragma_* and the like) are not available to caller SQL.');
    if (FUNCTION_OPS.has(op.opcode) && op.p4 && DENIED_FUNCTIONS.test(op.p4)) throw refuse(`The function ${op.p4.replace(/\(.*$/, '')}() is not available.`);
    // Clear (DELETE without WHERE) names its b-tree in p1 and its database in p2.
    const opens = op.opcode === 'OpenRead' || op.opcode === 'OpenWrite' || op.opcode === 'ReopenIdx';
    if (opens || op.opcode === 'Clear') {
      const [root, schemaNo] = opens ? [op.p2, op.p3] : [op.p1, op.p2];
      if (schemaNo !== 0) throw refuse('The statement may use only this database.');
      const table = root === 1 ? 'sqlite_schema' : roots.get(root);
      if (!table || !tables.has(table)) {
        if (table?.startsWith('sqlite_')) throw refuse(`${table} is internal to SQLite and not available to caller SQL.`);
        throw new AppError('data_not_found', 'The statement uses a table that is not in this database.');
      }
      (op.opcode === 'OpenRead' || op.opcode === 'ReopenIdx' ? reads : writes).add(table);
    }
  }
  for (const t of writes) reads.delete(t);
  checkGrants(reads, writes, grants);
  return { stmt, reads, writes };
}

export function checkGrants(reads: Set<string>, writes: Set<string>, grants: TableGrants): void {
  const has = (list: '*' | string[], t: string) => list === '*' || list.includes(t);
  for (const t of writes) if (!has(grants.write, t)) throw new AppError('data_forbidden', `This key may not write table ${t}.`);
  for (const t of reads) if (!has(grants.read, t)) throw new AppError('data_forbidden', `This key may not read table ${t}.`);
}
