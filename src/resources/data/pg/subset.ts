import { AppError, type ErrorCode } from '../../../kernel/errors.js';
import { SYSTEM_COLUMNS } from '../schema.js';
import { ALLOWED_FUNCTIONS, ALLOWED_TYPES, ALLOWED_VALUE_KEYWORDS, CATALOG_TYPE, ROW_CALLABLE } from './functions.js';
import { parsePg, ParseError, type ParseTree } from './parser.js';
import { numberPlaceholders } from './placeholders.js';

// The parser layer of the Postgres provider's /query: the first of two layers (the second is the
// database role's privileges, and READ ONLY for reads), tested alone. The statement is parsed by
// PostgreSQL's own parser (libpg_query, compiled to WASM) and the whole parse tree is walked:
// every node, through every field, must be of a type and have only fields this file lists, so
// syntax the subset does not name is refused by default, wherever it appears. Along the walk:
//   - every table reference (RangeVar) is unqualified; a name not in scope as a WITH query must be
//     one of the database's tables (and never a pg_* name, which resolves to pg_catalog first);
//   - every function call is one of the allow-list in functions.ts, unqualified or pg_catalog.,
//     also when written as a field (PostgreSQL's attribute notation: (x).f and t.f call f(x), f(t));
//   - every cast names a type of the allow-list (reg* types, which read the catalogs, are refused);
//   - operators and collations are unqualified or pg_catalog.;
//   - INSERT, UPDATE and DELETE appear only in write mode (at the top, or as WITH queries), and so do
//     locking clauses (FOR UPDATE/SHARE);
//   - no INSERT column list, UPDATE SET target or ON CONFLICT DO UPDATE SET target names a system
//     column (compared case-insensitively after Postgres has folded and decoded the identifier);
//   - the $n parameters used are $1..$n, and n is the number of params sent (SQLite's `?`
//     placeholders are numbered first, by placeholders.ts).

/** What the parser layer says about one admitted statement. */
export interface PgAdmission {
  /** The statement's kind. */
  kind: 'select' | 'insert' | 'update' | 'delete';
  /** Tables of the database read and written (unqualified names as in the database's schema). */
  reads: string[];
  writes: string[];
  /** Highest $n used (0 = none). */
  params: number;
  /** The statement to run: as sent, or with its `?` placeholders numbered $1…$n (placeholders.ts). */
  sql: string;
}

type Mode = 'read' | 'write';
type Kind = PgAdmission['kind'];

/** Nodes nested deeper than this are refused (the walk recurses; real queries stay far below it). */
const MAX_DEPTH = 1000;
const SUBSET = 'one SELECT, or in write mode one INSERT, UPDATE or DELETE';
const NAME_THE_COLUMNS = 'Name the columns of an INSERT (INSERT INTO t (a, b) ...); system columns are written by the server.';
const SYSTEM = new Set<string>(SYSTEM_COLUMNS);

class Refusal extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly path = 'body.sql',
  ) {
    super(message);
  }
}
const invalid = (message: string, path?: string): Refusal => new Refusal('data_invalid', message, path);
const forbidden = (message: string): Refusal => new Refusal('data_forbidden', message);

/** The statement's parse tree, or a 400 naming what the parser could not read. */
async function parseSql(sql: string): Promise<ParseTree> {
  try {
    return await parsePg(sql);
  } catch (err) {
    if (err instanceof ParseError) {
      const at = err.position > 0 ? ` (at character ${err.position})` : '';
      // A `?` placeholder the statement could not be read with (placeholders.ts): say how PostgreSQL numbers them.
      const numbering = sql.includes('?') ? ' PostgreSQL numbers parameters $1, $2 …; a ? is taken for one only where the statement reads with it as a parameter.' : '';
      throw invalid(`${err.message}${at}.${numbering}`);
    }
    throw tooDeep(err);
  }
}

const tooDeep = (err: unknown): unknown => (err instanceof RangeError ? invalid(`The statement is nested too deeply to parse (at most ${MAX_DEPTH} levels).`) : err);

// ---------------------------------------------------------------------------------------------
// The node types of the subset and their fields. A field maps to null when its value is a scalar
// or a wrapped node / list of wrapped nodes ({"TypeName": {...}}), and to a type name when
// libpg_query writes that struct inline (without the wrapper). Any other node type, and any field
// not listed, is refused.

type Fields = Readonly<Record<string, string | null>>;
const _ = null;
const NODES: Readonly<Record<string, Fields>> = {
  SelectStmt: {
    distinctClause: _,
    intoClause: 'IntoClause',
    targetList: _,
    fromClause: _,
    whereClause: _,
    groupClause: _,
    groupDistinct: _,
    havingClause: _,
    windowClause: _,
    valuesLists: _,
    sortClause: _,
    limitOffset: _,
    limitCount: _,
    limitOption: _,
    lockingClause: _,
    withClause: 'WithClause',
    op: _,
    all: _,
    larg: 'SelectStmt',
    rarg: 'SelectStmt',
  },
  InsertStmt: { relation: 'RangeVar', cols: _, selectStmt: _, onConflictClause: 'OnConflictClause', returningList: _, withClause: 'WithClause', override: _ },
  UpdateStmt: { relation: 'RangeVar', targetList: _, whereClause: _, fromClause: _, returningList: _, withClause: 'WithClause' },
  DeleteStmt: { relation: 'RangeVar', usingClause: _, whereClause: _, returningList: _, withClause: 'WithClause' },
  WithClause: { ctes: _, recursive: _, location: _ },
  CommonTableExpr: {
    ctename: _,
    aliascolnames: _,
    ctematerialized: _,
    ctequery: _,
    search_clause: 'CTESearchClause',
    cycle_clause: 'CTECycleClause',
    location: _,
  },
  CTESearchClause: { search_col_list: _, search_breadth_first: _, search_seq_column: _, location: _ },
  CTECycleClause: { cycle_col_list: _, cycle_mark_column: _, cycle_mark_value: _, cycle_mark_default: _, cycle_path_column: _, location: _ },
  ResTarget: { name: _, indirection: _, val: _, location: _ },
  RangeVar: { catalogname: _, schemaname: _, relname: _, inh: _, relpersistence: _, alias: 'Alias', location: _ },
  Alias: { aliasname: _, colnames: _ },
  JoinExpr: { jointype: _, isNatural: _, larg: _, rarg: _, usingClause: _, join_using_alias: 'Alias', quals: _, alias: 'Alias', rtindex: _ },
  RangeSubselect: { lateral: _, subquery: _, alias: 'Alias' },
  RangeFunction: { lateral: _, ordinality: _, is_rowsfrom: _, functions: _, alias: 'Alias', coldeflist: _ },
  ColumnDef: { colname: _, typeName: 'TypeName', is_local: _, location: _ },
  SortBy: { node: _, sortby_dir: _, sortby_nulls: _, useOp: _, location: _ },
  WindowDef: { name: _, refname: _, partitionClause: _, orderClause: _, frameOptions: _, startOffset: _, endOffset: _, location: _ },
  LockingClause: { lockedRels: _, strength: _, waitPolicy: _ },
  OnConflictClause: { action: _, infer: 'InferClause', targetList: _, whereClause: _, location: _ },
  InferClause: { indexElems: _, whereClause: _, conname: _, location: _ },
  IndexElem: { name: _, expr: _, collation: _, ordering: _, nulls_ordering: _ },
  ColumnRef: { fields: _, location: _ },
  ParamRef: { number: _, location: _ },
  A_Const: { ival: 'Integer', fval: 'Float', boolval: 'Boolean', sval: 'String', bsval: 'BitString', isnull: _, location: _ },
  Integer: { ival: _ },
  Float: { fval: _ },
  Boolean: { boolval: _ },
  String: { sval: _ },
  BitString: { bsval: _ },
  List: { items: _ },
  TypeCast: { arg: _, typeName: 'TypeName', location: _ },
  TypeName: { names: _, typmods: _, typemod: _, arrayBounds: _, setof: _, pct_type: _, location: _ },
  CollateClause: { arg: _, collname: _, location: _ },
  FuncCall: {
    funcname: _,
    args: _,
    agg_order: _,
    agg_filter: _,
    over: 'WindowDef',
    agg_within_group: _,
    agg_star: _,
    agg_distinct: _,
    func_variadic: _,
    funcformat: _,
    location: _,
  },
  NamedArgExpr: { arg: _, name: _, argnumber: _, location: _ },
  A_Star: {},
  A_Indices: { is_slice: _, lidx: _, uidx: _ },
  A_Indirection: { arg: _, indirection: _ },
  A_ArrayExpr: { elements: _, location: _ },
  A_Expr: { kind: _, name: _, lexpr: _, rexpr: _, location: _ },
  MultiAssignRef: { source: _, colno: _, ncolumns: _ },
  RowExpr: { args: _, row_format: _, colnames: _, location: _ },
  SubLink: { subLinkType: _, subLinkId: _, testexpr: _, operName: _, subselect: _, location: _ },
  BoolExpr: { boolop: _, args: _, location: _ },
  NullTest: { arg: _, nulltesttype: _, argisrow: _, location: _ },
  BooleanTest: { arg: _, booltesttype: _, location: _ },
  CaseExpr: { arg: _, args: _, defresult: _, location: _ },
  CaseWhen: { expr: _, result: _, location: _ },
  CoalesceExpr: { args: _, location: _ },
  MinMaxExpr: { op: _, args: _, location: _ },
  SQLValueFunction: { op: _, typmod: _, location: _ },
  SetToDefault: { location: _ },
  GroupingSet: { kind: _, content: _, location: _ },
  GroupingFunc: { args: _, location: _ },
};

/** How a refused node type is named in the message (else its parse-tree name). */
const SYNTAX_NAMES: Readonly<Record<string, string>> = {
  IntoClause: 'SELECT … INTO',
  MergeStmt: 'MERGE',
  RangeTableSample: 'TABLESAMPLE',
  RangeTableFunc: 'XMLTABLE',
  JsonTable: 'JSON_TABLE',
  XmlExpr: 'An XML expression',
  XmlSerialize: 'XMLSERIALIZE',
  CurrentOfExpr: 'WHERE CURRENT OF',
  MergeSupportFunc: 'MERGE_ACTION()',
  JsonObjectConstructor: 'JSON_OBJECT()',
  JsonArrayConstructor: 'JSON_ARRAY()',
  JsonArrayQueryConstructor: 'JSON_ARRAY()',
  JsonObjectAgg: 'JSON_OBJECTAGG()',
  JsonArrayAgg: 'JSON_ARRAYAGG()',
  JsonIsPredicate: 'IS JSON',
  JsonFuncExpr: 'JSON_QUERY(), JSON_VALUE() and JSON_EXISTS()',
  JsonParseExpr: 'JSON()',
  JsonScalarExpr: 'JSON_SCALAR()',
  JsonSerializeExpr: 'JSON_SERIALIZE()',
};

/** Statement kinds outside the subset, named as SQL names them (else from the node type: CreateFunctionStmt → CREATE FUNCTION). */
const STATEMENT_NAMES: Readonly<Record<string, string>> = {
  CreateStmt: 'CREATE TABLE',
  CreateTableAsStmt: 'CREATE TABLE AS',
  IndexStmt: 'CREATE INDEX',
  ViewStmt: 'CREATE VIEW',
  DropStmt: 'DROP',
  RenameStmt: 'ALTER … RENAME',
  VariableShowStmt: 'SHOW',
  ClosePortalStmt: 'CLOSE',
  DeclareCursorStmt: 'DECLARE',
  CheckPointStmt: 'CHECKPOINT',
  CreateForeignServerStmt: 'CREATE SERVER',
  CreateFdwStmt: 'CREATE FOREIGN DATA WRAPPER',
  CreatedbStmt: 'CREATE DATABASE',
  DropdbStmt: 'DROP DATABASE',
};
const SCHEMA_CHANGES = new Set(['CreateStmt', 'CreateTableAsStmt', 'IndexStmt', 'ViewStmt', 'DropStmt', 'RenameStmt', 'AlterTableStmt']);

type Wrapped = Record<string, unknown>;
type Body = Record<string, unknown>;

function statementName(type: string, body: Body): string {
  switch (type) {
    case 'VariableSetStmt': {
      const name = typeof body.name === 'string' ? ` ${body.name}` : '';
      if (body.kind === 'VAR_RESET_ALL') return 'RESET ALL';
      return `${body.kind === 'VAR_RESET' ? 'RESET' : 'SET'}${name}`;
    }
    case 'TransactionStmt':
      return String(body.kind ?? 'TRANS_STMT_BEGIN')
        .replace(/^TRANS_STMT_/, '')
        .replace(/_/g, ' ');
    case 'GrantStmt':
    case 'GrantRoleStmt':
      return body.is_grant ? 'GRANT' : 'REVOKE';
    case 'VacuumStmt':
      return body.is_vacuumcmd ? 'VACUUM' : 'ANALYZE';
    case 'FetchStmt':
      return body.ismove ? 'MOVE' : 'FETCH';
  }
  return (
    STATEMENT_NAMES[type] ??
    type
      .replace(/Stmt$/, '')
      .replace(/([a-z])([A-Z])/g, '$1 $2')
      .toUpperCase()
  );
}

const DML: Readonly<Record<string, Kind>> = { InsertStmt: 'insert', UpdateStmt: 'update', DeleteStmt: 'delete' };
const LOCKS: Readonly<Record<string, string>> = {
  LCS_FORKEYSHARE: 'FOR KEY SHARE',
  LCS_FORSHARE: 'FOR SHARE',
  LCS_FORNOKEYUPDATE: 'FOR NO KEY UPDATE',
  LCS_FORUPDATE: 'FOR UPDATE',
};

/** The single node type and body of a wrapped node, or null for an empty one ({} is a NULL in a list). */
function unwrap(value: unknown, where: string): [string, Body] | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(`The parse tree is not what the subset expects (${where}).`);
  const keys = Object.keys(value);
  if (keys.length === 0) return null;
  if (keys.length !== 1) throw invalid(`The parse tree is not what the subset expects (${where}).`);
  const body = (value as Wrapped)[keys[0]!];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid(`The parse tree is not what the subset expects (${keys[0]}).`);
  return [keys[0]!, body as Body];
}

/** The strings of a name list ([{String: {sval}}...]): a qualified name's parts. */
function nameParts(list: unknown, where: string): string[] {
  if (!Array.isArray(list)) throw invalid(`The parse tree is not what the subset expects (${where}).`);
  return list.map((item) => {
    const node = unwrap(item, where);
    if (node?.[0] !== 'String' || typeof node[1].sval !== 'string') throw invalid(`The parse tree is not what the subset expects (${where}).`);
    return node[1].sval;
  });
}

/** Unqualified, or qualified by pg_catalog: the only names of functions, types, operators and collations caller SQL may use. */
const catalogOrBare = (parts: string[]): boolean => parts.length === 1 || (parts.length === 2 && parts[0] === 'pg_catalog');

const qualified = (parts: (string | undefined)[]): string => parts.filter((p): p is string => typeof p === 'string' && p !== '').join('.');

/** The structural result of a walk: everything but the checks that depend on the request (tables, params count). */
interface Shape {
  kind: Kind;
  reads: string[];
  writes: string[];
  /** Every table named, in order of appearance (for the 404's name). */
  relations: string[];
  params: number;
  /** The lowest $k below the highest that is not used (0 = none). */
  gap: number;
  /** The statement to run. */
  sql: string;
}

class Walker {
  readonly reads: string[] = [];
  readonly writes: string[] = [];
  readonly relations: string[] = [];
  readonly params = new Set<number>();

  constructor(readonly mode: Mode) {}

  private noteRelation(name: string, into: string[]): void {
    if (!into.includes(name)) into.push(name);
    if (!this.relations.includes(name)) this.relations.push(name);
  }

  /** A table reference: unqualified, not a catalog; a WITH query in scope is not a table. */
  private relation(rv: Body, ctes: ReadonlySet<string>, target: boolean): void {
    const relname = typeof rv.relname === 'string' ? rv.relname : '';
    if (rv.catalogname || rv.schemaname) {
      const name = qualified([rv.catalogname as string, rv.schemaname as string, relname]);
      const what = rv.catalogname ? 'names another database' : rv.schemaname === 'pg_catalog' || rv.schemaname === 'information_schema' ? 'is a system catalog' : 'names a schema';
      throw forbidden(`${name} ${what}: a statement names only this database's own tables, unqualified.`);
    }
    if (!target && ctes.has(relname)) return;
    if (relname.startsWith('pg_')) throw forbidden(`${relname} is a system catalog name (Postgres looks pg_* names up in pg_catalog first): a statement reads only this database's own tables.`);
    this.noteRelation(relname, target ? this.writes : this.reads);
  }

  /** Columns a write assigns (INSERT column list, UPDATE SET, ON CONFLICT DO UPDATE SET): never a system column, however spelled. */
  private assigned(targets: unknown, where: string): void {
    if (targets === undefined) return;
    if (!Array.isArray(targets)) throw invalid(`The parse tree is not what the subset expects (${where}).`);
    for (const item of targets) {
      const node = unwrap(item, where);
      if (node?.[0] !== 'ResTarget') throw invalid(`The parse tree is not what the subset expects (${where}).`);
      const rt = node[1];
      const parts = [typeof rt.name === 'string' ? rt.name : ''];
      if (Array.isArray(rt.indirection)) {
        for (const ind of rt.indirection) {
          const n = unwrap(ind, where);
          if (n?.[0] === 'String' && typeof n[1].sval === 'string') parts.push(n[1].sval);
        }
      }
      for (const name of parts) {
        const folded = name.toLowerCase();
        if (SYSTEM.has(folded)) {
          const spelled = folded === name ? '' : ` (spelled "${name}" here)`;
          throw forbidden(`${folded} is a system column written only by the server${spelled}.`);
        }
      }
    }
  }

  /** A WITH clause: each query sees the ones before it (all of them when RECURSIVE); returns the scope of the statement it belongs to. */
  private withClause(body: Body, ctes: ReadonlySet<string>, depth: number): ReadonlySet<string> {
    this.checkFields('WithClause', body);
    const list = Array.isArray(body.ctes) ? body.ctes : [];
    const items = list.map((item) => {
      const node = unwrap(item, 'WithClause.ctes');
      if (node?.[0] !== 'CommonTableExpr') throw invalid('The parse tree is not what the subset expects (WithClause.ctes).');
      return node[1];
    });
    const names = items.map((cte) => String(cte.ctename ?? ''));
    const all = new Set([...ctes, ...names]);
    items.forEach((cte, i) => {
      const query = cte.ctequery === undefined ? null : unwrap(cte.ctequery, 'CommonTableExpr.ctequery');
      if (query && DML[query[0]] && this.mode === 'read') {
        throw forbidden(
          `The WITH query ${names[i]} is ${query[0] === 'InsertStmt' ? 'an' : 'a'} ${query[0].replace(/Stmt$/, '').toUpperCase()}: read mode runs no writes (send it with mode "write").`,
        );
      }
      const visible = body.recursive ? all : new Set([...ctes, ...names.slice(0, i)]);
      this.node('CommonTableExpr', cte, visible, depth + 1);
    });
    return all;
  }

  private checkFields(type: string, body: Body): Fields {
    const fields = NODES[type];
    if (!fields) throw invalid(`${SYNTAX_NAMES[type] ?? `The ${type} construct`} is not in the subset /query admits.`);
    for (const key of Object.keys(body)) {
      if (!(key in fields)) throw invalid(`The statement uses syntax outside the subset /query admits (${type}.${key}).`);
    }
    return fields;
  }

  /** Walks one node of type `type` (its body), in the scope of WITH queries `ctes`. */
  node(type: string, body: Body, ctes: ReadonlySet<string>, depth: number): void {
    if (depth > MAX_DEPTH) throw invalid(`The statement is nested too deeply (at most ${MAX_DEPTH} levels).`);
    const fields = this.checkFields(type, body);
    const skip = new Set<string>();
    switch (type) {
      case 'SelectStmt':
        if (body.intoClause) throw invalid(`SELECT … INTO creates a table; it is not in the subset /query admits (${SUBSET}).`);
        break;
      case 'InsertStmt':
      case 'UpdateStmt':
      case 'DeleteStmt': {
        const kind = DML[type]!.toUpperCase();
        if (this.mode === 'read') throw forbidden(`${kind} writes; send it with mode "write".`);
        if (type === 'InsertStmt') {
          if (body.override !== undefined && body.override !== 'OVERRIDING_NOT_SET') throw invalid(`INSERT … OVERRIDING is not in the subset /query admits.`);
          if (body.cols === undefined && body.selectStmt !== undefined) throw invalid(NAME_THE_COLUMNS);
          this.assigned(body.cols, 'InsertStmt.cols');
          const oc = body.onConflictClause as Body | undefined;
          if (oc) this.assigned(oc.targetList, 'OnConflictClause.targetList');
        }
        if (type === 'UpdateStmt') this.assigned(body.targetList, 'UpdateStmt.targetList');
        const target = body.relation as Body | undefined;
        if (!target || typeof target !== 'object') throw invalid(`The parse tree is not what the subset expects (${type}.relation).`);
        this.checkFields('RangeVar', target);
        this.relation(target, ctes, true);
        if (target.alias) this.node('Alias', target.alias as Body, ctes, depth + 1);
        skip.add('relation');
        break;
      }
      case 'RangeVar':
        this.relation(body, ctes, false);
        break;
      case 'FuncCall': {
        const parts = nameParts(body.funcname, 'FuncCall.funcname');
        const name = parts.join('.');
        if (!catalogOrBare(parts)) throw forbidden(`The function ${name}() is not available: a function may be qualified only by pg_catalog.`);
        if (!ALLOWED_FUNCTIONS.has(parts[parts.length - 1]!)) throw forbidden(`The function ${name}() is not available to caller SQL (it is not in the documented allow-list).`);
        skip.add('funcname');
        break;
      }
      // Attribute notation: PostgreSQL reads t.name, when table t has no column name, as the call
      // name(t), and (x).name, when x has no field name, as name(x), with any one-argument function.
      case 'ColumnRef': {
        const refs = Array.isArray(body.fields) ? body.fields.map((f) => unwrap(f, 'ColumnRef.fields')) : [];
        const parts = refs.map((f) => (f?.[0] === 'String' ? String(f[1].sval) : '*'));
        if (parts.length > 2) throw forbidden(`${parts.join('.')} names a schema: a column is named by itself or after its table (or the table's alias), unqualified.`);
        const name = parts[1];
        if (name !== undefined && refs[1]?.[0] === 'String' && ROW_CALLABLE.has(name) && !ALLOWED_FUNCTIONS.has(name)) {
          throw forbidden(`${parts.join('.')} is the call ${name}(${parts[0]}) to PostgreSQL when ${parts[0]} has no column ${name}, and the function ${name}() is not available to caller SQL.`);
        }
        break;
      }
      case 'A_Indirection':
        for (const item of Array.isArray(body.indirection) ? body.indirection : []) {
          const node = unwrap(item, 'A_Indirection.indirection');
          if (node?.[0] !== 'String') continue;
          const name = String(node[1].sval);
          if (!ALLOWED_FUNCTIONS.has(name)) {
            throw forbidden(`(…).${name} is refused: PostgreSQL reads (x).${name} as the call ${name}(x) when x has no field ${name}, and the function ${name}() is not available to caller SQL.`);
          }
        }
        break;
      case 'TypeName': {
        const parts = nameParts(body.names, 'TypeName.names');
        const name = parts.join('.');
        if (body.pct_type) throw invalid(`The type ${name}%TYPE is not in the subset /query admits.`);
        if (body.setof) throw invalid(`The type SETOF ${name} is not in the subset /query admits.`);
        if (!catalogOrBare(parts)) throw forbidden(`The type ${name} is not available: a type may be qualified only by pg_catalog.`);
        const base = parts[parts.length - 1]!;
        if (CATALOG_TYPE.test(base)) throw forbidden(`A cast to ${base} is refused: the reg* types look names up in the system catalogs.`);
        if (!ALLOWED_TYPES.has(base)) throw invalid(`The type ${name} is not in the subset /query admits (a cast may name ${[...ALLOWED_TYPES].join(', ')}, or arrays of them).`);
        skip.add('names');
        break;
      }
      case 'A_Expr':
      case 'SortBy':
      case 'SubLink': {
        const key = type === 'A_Expr' ? 'name' : type === 'SortBy' ? 'useOp' : 'operName';
        if (body[key] !== undefined) {
          const parts = nameParts(body[key], `${type}.${key}`);
          if (!catalogOrBare(parts)) throw forbidden(`The operator ${parts.join('.')} is not available: an operator may be qualified only by pg_catalog.`);
          skip.add(key);
        }
        break;
      }
      case 'CollateClause':
      case 'IndexElem': {
        const key = type === 'CollateClause' ? 'collname' : 'collation';
        if (body[key] !== undefined) {
          const parts = nameParts(body[key], `${type}.${key}`);
          if (!catalogOrBare(parts)) throw forbidden(`The collation ${parts.join('.')} is not available: a collation may be qualified only by pg_catalog.`);
          skip.add(key);
        }
        break;
      }
      case 'SQLValueFunction': {
        const op = String(body.op ?? '');
        if (!ALLOWED_VALUE_KEYWORDS[op]) {
          throw forbidden(`${op.replace(/^SVFOP_/, '').replace(/_N$/, '')} is not available to caller SQL: it names the session's role, database or schema.`);
        }
        break;
      }
      case 'LockingClause': {
        const lock = LOCKS[String(body.strength)] ?? 'A locking clause';
        if (this.mode === 'read') throw forbidden(`${lock} locks rows, which read mode may not do; send it with mode "write".`);
        // FOR UPDATE OF names FROM items (aliases), not tables: only their qualification matters.
        for (const item of Array.isArray(body.lockedRels) ? body.lockedRels : []) {
          const node = unwrap(item, 'LockingClause.lockedRels');
          if (node?.[0] !== 'RangeVar') throw invalid('The parse tree is not what the subset expects (LockingClause.lockedRels).');
          if (node[1].schemaname || node[1].catalogname)
            throw forbidden(`${qualified([node[1].catalogname as string, node[1].schemaname as string, node[1].relname as string])}: ${lock} OF names the statement's own FROM items, unqualified.`);
        }
        skip.add('lockedRels');
        break;
      }
      case 'ParamRef': {
        const n = body.number;
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) throw invalid('A parameter must be $1 or higher.');
        this.params.add(n);
        break;
      }
    }
    let scope = ctes;
    if (body.withClause !== undefined) {
      scope = this.withClause(body.withClause as Body, ctes, depth);
      skip.add('withClause');
    }
    for (const [key, value] of Object.entries(body)) {
      if (skip.has(key) || value === null || typeof value !== 'object') continue;
      const inline = fields[key];
      if (inline) {
        if (Array.isArray(value)) throw invalid(`The parse tree is not what the subset expects (${type}.${key}).`);
        this.node(inline, value as Body, scope, depth + 1);
      } else if (Array.isArray(value)) {
        for (const item of value) this.wrapped(item, scope, depth + 1, `${type}.${key}`);
      } else {
        this.wrapped(value, scope, depth + 1, `${type}.${key}`);
      }
    }
  }

  private wrapped(value: unknown, ctes: ReadonlySet<string>, depth: number, where: string): void {
    const node = unwrap(value, where);
    if (node) this.node(node[0], node[1], ctes, depth);
  }
}

/** Parses and walks one statement: its shape, or a Refusal. */
async function shape(sql: string, mode: Mode): Promise<Shape> {
  // The C parser reads a NUL as the end of the string: what follows would not be checked.
  if (sql.includes('\u0000')) throw invalid('The SQL contains a NUL character.');
  // PostgreSQL's whitespace (the WASM wrapper has no parse result for an empty string).
  if (/^[ \t\n\r\f\v]*$/.test(sql)) throw invalid('The SQL has no statement.');
  const numbered = await numberPlaceholders(sql).catch((err) => Promise.reject(tooDeep(err)));
  if (numbered && 'mixed' in numbered) throw invalid('The statement uses both ? placeholders and $n parameters: number them all $1, $2 …');
  if (numbered) sql = numbered.sql;
  const tree = await parseSql(sql);
  const stmts = tree.stmts ?? [];
  if (stmts.length === 0) throw invalid('The SQL has no statement.');
  if (stmts.length > 1) throw invalid(`Send one statement per request (this SQL has ${stmts.length}).`);
  const top = stmts[0]!.stmt === undefined ? null : unwrap(stmts[0]!.stmt, 'RawStmt.stmt');
  if (!top) throw invalid('The SQL has no statement.');
  const [type, body] = top;
  const kind: Kind | undefined = type === 'SelectStmt' ? 'select' : DML[type];
  if (!kind) {
    const name = statementName(type, body);
    const migrations = SCHEMA_CHANGES.has(type) ? '; schema changes go through POST /api/v1/data/{resource}/migrations' : '';
    throw invalid(`${name} is not in the subset /query admits (${SUBSET})${migrations}.`);
  }
  const walker = new Walker(mode);
  walker.node(type, body, new Set(), 1);
  if (mode === 'write' && walker.writes.length === 0) throw invalid('The statement does not write; send it with mode "read" (the default).');
  const params = walker.params.size ? Math.max(...walker.params) : 0;
  // The wire protocol carries at most 65535 parameters.
  if (params > 65535) throw invalid(`The statement uses $${params}; a statement takes at most 65535 parameters.`, 'body.params');
  // The lowest unused number below the highest, if any, is at most the count of numbers used.
  let gap = 0;
  if (walker.params.size < params) {
    gap = 1;
    while (walker.params.has(gap)) gap++;
  }
  const reads = walker.reads.filter((t) => !walker.writes.includes(t));
  return { kind, reads, writes: walker.writes, relations: walker.relations, params, gap, sql };
}

// ---------------------------------------------------------------------------------------------
// Admissions are decided once per (mode, SQL text) and kept in a bounded map (least recently used
// out first): refusals too, since the same text always gets the same answer. What depends on the
// request, the database's tables and the number of params, is checked on every call.

type Outcome = { shape: Shape } | { refusal: Refusal };
const CACHE_ENTRIES = 2000;
const CACHE_CHARS = 4 * 1024 * 1024;
const cache = new Map<string, Outcome>();
let cachedChars = 0;

function remember(key: string, outcome: Outcome): void {
  if (key.length > CACHE_CHARS / 16) return;
  // Two requests with the same text may both have missed: count it once.
  if (cache.delete(key)) cachedChars -= key.length;
  cache.set(key, outcome);
  cachedChars += key.length;
  for (const [k] of cache) {
    if (cache.size <= CACHE_ENTRIES && cachedChars <= CACHE_CHARS) break;
    cache.delete(k);
    cachedChars -= k.length;
  }
}

const toAppError = (r: Refusal): AppError => new AppError(r.code, r.message, { details: [{ path: r.path, message: r.message }] });

/**
 * Parses and admits one caller statement, or throws AppError (data_invalid 400 for what is not SQL
 * or not in the subset; data_forbidden 403 for what is refused on purpose: other schemas, catalogs,
 * forbidden functions, writes in read mode, system columns); the message names what was refused (the
 * function, the table, the statement kind, the column). `tables` = the database's own tables; a name
 * not among them is 404 data_not_found naming it.
 */
export async function admitPgSql(sql: string, mode: 'read' | 'write', tables: ReadonlySet<string>, paramCount: number): Promise<PgAdmission> {
  const key = `${mode}\u0000${sql}`;
  let outcome = cache.get(key);
  if (outcome) {
    cache.delete(key);
    cache.set(key, outcome);
  } else {
    try {
      outcome = { shape: await shape(sql, mode) };
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      outcome = { refusal: err };
    }
    remember(key, outcome);
  }
  if ('refusal' in outcome) throw toAppError(outcome.refusal);
  const s = outcome.shape;
  const missing = s.relations.find((t) => !tables.has(t));
  if (missing !== undefined) {
    const message = `The table ${missing} is not in this database.`;
    throw new AppError('data_not_found', message, { details: [{ path: 'body.sql', message }] });
  }
  if (s.gap) throw toAppError(invalid(`The statement uses $${s.params} but not $${s.gap}: number the parameters $1 to $${s.params} without gaps.`, 'body.params'));
  if (paramCount !== s.params) {
    const uses = s.params ? `uses $1 to $${s.params}` : 'uses no parameter';
    throw toAppError(invalid(`The statement ${uses} but ${paramCount} param${paramCount === 1 ? ' was' : 's were'} sent; send exactly ${s.params}.`, 'body.params'));
  }
  return { kind: s.kind, reads: [...s.reads], writes: [...s.writes], params: s.params, sql: s.sql };
}
