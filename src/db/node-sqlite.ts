import { existsSync } from 'node:fs';
import { nodeSqlite, type NodeSqliteDatabase as NodeSqliteDb, type NodeSqliteStatement } from './sqlite-binding.js';

// better-sqlite3's shape over node:sqlite, for the parts svc uses, so that the state, the data
// workers, doctor, the tests and the benchmarks need not know which binding runs (src/db/sqlite.ts).
// What it keeps of better-sqlite3: errors are SqliteErrors whose code names SQLite's extended
// result code (SQLITE_CONSTRAINT_UNIQUE…); BLOBs come back as Buffers; a named-parameter object
// may stand anywhere among the parameters and arrays are spread, and too few are refused;
// prepare() takes one statement and refuses more; pluck(), raw(), safeIntegers(), reader,
// readonly, pragma(), and transaction() with savepoints when nested; a 5 s busy timeout; the file
// must exist with `fileMustExist`. Rows are objects without a prototype (a column may be named
// __proto__), as node:sqlite makes them.

/** SQLite's primary result codes, by number. */
const PRIMARY = [
  'OK',
  'ERROR',
  'INTERNAL',
  'PERM',
  'ABORT',
  'BUSY',
  'LOCKED',
  'NOMEM',
  'READONLY',
  'INTERRUPT',
  'IOERR',
  'CORRUPT',
  'NOTFOUND',
  'FULL',
  'CANTOPEN',
  'PROTOCOL',
  'EMPTY',
  'SCHEMA',
  'TOOBIG',
  'CONSTRAINT',
  'MISMATCH',
  'MISUSE',
  'NOLFS',
  'AUTH',
  'FORMAT',
  'RANGE',
  'NOTADB',
  'NOTICE',
  'WARNING',
];

/** The extended result codes (primary | n << 8), by primary code: index n - 1 names n. */
const EXTENDED: Record<number, string[]> = {
  1: ['MISSING_COLLSEQ', 'RETRY', 'SNAPSHOT'],
  4: ['ROLLBACK'],
  5: ['RECOVERY', 'SNAPSHOT', 'TIMEOUT'],
  6: ['SHAREDCACHE', 'VTAB'],
  8: ['RECOVERY', 'CANTLOCK', 'ROLLBACK', 'DBMOVED', 'CANTINIT', 'DIRECTORY'],
  10: [
    'READ',
    'SHORT_READ',
    'WRITE',
    'FSYNC',
    'DIR_FSYNC',
    'TRUNCATE',
    'FSTAT',
    'UNLOCK',
    'RDLOCK',
    'DELETE',
    'BLOCKED',
    'NOMEM',
    'ACCESS',
    'CHECKRESERVEDLOCK',
    'LOCK',
    'CLOSE',
    'DIR_CLOSE',
    'SHMOPEN',
    'SHMSIZE',
    'SHMLOCK',
    'SHMMAP',
    'SEEK',
    'DELETE_NOENT',
    'MMAP',
    'GETTEMPPATH',
    'CONVPATH',
    'VNODE',
    'AUTH',
    'BEGIN_ATOMIC',
    'COMMIT_ATOMIC',
    'ROLLBACK_ATOMIC',
    'DATA',
    'CORRUPTFS',
    'IN_PAGE',
  ],
  11: ['VTAB', 'SEQUENCE', 'INDEX'],
  14: ['NOTEMPDIR', 'ISDIR', 'FULLPATH', 'CONVPATH', 'DIRTYWAL', 'SYMLINK'],
  19: ['CHECK', 'COMMITHOOK', 'FOREIGNKEY', 'FUNCTION', 'NOTNULL', 'PRIMARYKEY', 'TRIGGER', 'UNIQUE', 'VTAB', 'ROWID', 'PINNED', 'DATATYPE'],
  23: ['USER'],
  27: ['RECOVER_WAL', 'RECOVER_ROLLBACK', 'RBU'],
  28: ['AUTOINDEX'],
};

/** better-sqlite3's name for a result code: SQLITE_CONSTRAINT_UNIQUE for 2067. */
export function resultCodeName(code: number): string {
  const primary = PRIMARY[code & 0xff] ?? 'ERROR';
  const ext = code >> 8 ? EXTENDED[code & 0xff]?.[(code >> 8) - 1] : undefined;
  return ext ? `SQLITE_${primary}_${ext}` : `SQLITE_${primary}`;
}

export class SqliteError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'SqliteError';
  }
}

/** node:sqlite's error → better-sqlite3's: SqliteError for SQLite's, a codeless TypeError or RangeError for a bad parameter. */
function translate(err: unknown): unknown {
  const e = err as { code?: unknown; errcode?: unknown; message: string };
  if (e?.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number') return new SqliteError(e.message, resultCodeName(e.errcode));
  const node = typeof e?.code === 'string' && e.code.startsWith('ERR_');
  if (node && (err instanceof RangeError || /named parameter/.test(e.message))) return new RangeError(e.message);
  if (node && err instanceof TypeError) return new TypeError(e.message);
  return err;
}

/** Parameters as node:sqlite takes them: the named object first, arrays spread. */
function flatten(args: unknown[]): unknown[] {
  let plain = true;
  for (const a of args) {
    if (a !== null && typeof a === 'object' && !ArrayBuffer.isView(a)) {
      plain = false;
      break;
    }
  }
  if (plain) return args;
  let named: object | undefined;
  const anonymous: unknown[] = [];
  for (const a of args) {
    if (Array.isArray(a)) anonymous.push(...(a as unknown[]));
    else if (a !== null && typeof a === 'object' && !ArrayBuffer.isView(a)) named = a;
    else anonymous.push(a);
  }
  return named ? [named, ...anonymous] : anonymous;
}

const buffer = (v: unknown): unknown => (v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v);

const isRange = (err: unknown): boolean => (err as { errcode?: unknown }).errcode === 25; // SQLITE_RANGE

/**
 * What may follow the one statement SQLite prepared (node:sqlite prepares the first and drops the
 * rest, where better-sqlite3 refuses): whitespace, semicolons and comments, as better-sqlite3 allows.
 */
const EMPTY_TAIL = /^(?:[ \t\n\f\r;]+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?(?:\*\/|$))*$/;

/**
 * The opcodes that make a program write, as sqlite3_stmt_readonly() decides (vdbeaux.c,
 * resolveP2Values): a write transaction (Transaction with p2 ≠ 0), a checkpoint, VACUUM or a
 * journal-mode change. node:sqlite does not expose sqlite3_stmt_readonly(); the program says the same.
 */
const writes = (op: { opcode: string; p2: number }): boolean => (op.opcode === 'Transaction' && op.p2 !== 0) || op.opcode === 'Checkpoint' || op.opcode === 'Vacuum' || op.opcode === 'JournalMode';

class Statement {
  private mode: 'rows' | 'raw' | 'pluck' = 'rows';
  private columnCount: number | undefined;
  /**
   * Its parameters: how many take values in order (`?`), and how many there are in all, named
   * (`:a`, `@a`, `$a`) and numbered (`?2`) too, as sqlite3_bind_parameter_count() would say, which
   * node:sqlite does not give.
   */
  private paramCount: { anonymous: number; all: number } | undefined;
  private writesTo: boolean | undefined;

  constructor(
    private readonly db: NodeSqliteDb,
    private readonly s: NodeSqliteStatement,
    readonly source: string,
  ) {}

  /** Whether it leaves the database file as it is (better-sqlite3's `readonly`): read from its EXPLAIN program. */
  get readonly(): boolean {
    if (this.writesTo === undefined) {
      try {
        this.writesTo = (this.db.prepare(`EXPLAIN ${this.source}`).all() as { opcode: string; p2: number }[]).some(writes);
      } catch (err) {
        throw translate(err);
      }
    }
    return !this.writesTo;
  }

  /** Whether it returns rows (better-sqlite3's `reader`). */
  get reader(): boolean {
    return (this.columnCount ??= this.s.columns().length) > 0;
  }

  pluck(on = true): this {
    return this.as(on ? 'pluck' : this.mode === 'pluck' ? 'rows' : this.mode);
  }

  raw(on = true): this {
    return this.as(on ? 'raw' : this.mode === 'raw' ? 'rows' : this.mode);
  }

  safeIntegers(on = true): this {
    this.s.setReadBigInts(on);
    return this;
  }

  columns(): ReturnType<NodeSqliteStatement['columns']> {
    return this.s.columns();
  }

  run(...args: unknown[]): { changes: number; lastInsertRowid: number | bigint } {
    try {
      const r = this.s.run(...this.params(args));
      return { changes: Number(r.changes), lastInsertRowid: r.lastInsertRowid };
    } catch (err) {
      throw translate(err);
    }
  }

  get(...args: unknown[]): unknown {
    this.mustRead();
    let row: unknown;
    try {
      row = this.s.get(...this.params(args));
    } catch (err) {
      throw translate(err);
    }
    return row === undefined ? undefined : this.out(row);
  }

  all(...args: unknown[]): unknown[] {
    this.mustRead();
    let rows: unknown[];
    try {
      rows = this.s.all(...this.params(args));
    } catch (err) {
      throw translate(err);
    }
    for (let i = 0; i < rows.length; i++) rows[i] = this.out(rows[i]);
    return rows;
  }

  *iterate(...args: unknown[]): IterableIterator<unknown> {
    this.mustRead();
    let it: IterableIterator<unknown>;
    try {
      it = this.s.iterate(...this.params(args));
    } catch (err) {
      throw translate(err);
    }
    try {
      for (;;) {
        let next: IteratorResult<unknown>;
        try {
          next = it.next();
        } catch (err) {
          throw translate(err);
        }
        if (next.done) return;
        yield this.out(next.value);
      }
    } finally {
      it.return?.();
    }
  }

  /**
   * The parameters to bind. node:sqlite leaves a parameter with no value NULL where better-sqlite3
   * refuses the call ("Too few parameter values were provided", "Missing named parameter"), as
   * svc's callers rely on (a 400 for caller SQL). The counts are found once: the values taken in
   * order by binding NULLs without running anything (iterate() binds, return() resets), binary
   * search between what binds and what SQLite refuses with SQLITE_RANGE; all of them from the
   * EXPLAIN program, whose Variable opcodes name each parameter's index.
   */
  private params(args: unknown[]): unknown[] {
    const p = flatten(args);
    if (p.length && p[0] !== null && typeof p[0] === 'object' && !ArrayBuffer.isView(p[0])) return p; // named: node:sqlite checks them
    const { anonymous, all } = (this.paramCount ??= this.countParams(p.length));
    if (p.length < anonymous) throw new RangeError('Too few parameter values were provided');
    if (all > anonymous) throw new RangeError('Missing named parameter');
    return p;
  }

  private countParams(given: number): { anonymous: number; all: number } {
    const binds = (n: number): boolean => {
      try {
        this.s.iterate(...new Array<null>(n).fill(null)).return?.();
        return true;
      } catch (err) {
        if (isRange(err)) return false;
        throw translate(err);
      }
    };
    let lo = 0; // binds
    let hi = Math.max(1, given + 1); // refused, once found
    while (binds(hi)) [lo, hi] = [hi, hi * 2];
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (binds(mid)) lo = mid;
      else hi = mid;
    }
    let all = lo;
    if (/[:@$]|\?\d/.test(this.source)) {
      try {
        for (const op of this.db.prepare(`EXPLAIN ${this.source}`).all() as { opcode: string; p1: number }[]) if (op.opcode === 'Variable') all = Math.max(all, op.p1);
      } catch {
        // not a statement EXPLAIN takes (one that is an EXPLAIN already): the ordered count stands
      }
    }
    return { anonymous: lo, all };
  }

  private as(mode: 'rows' | 'raw' | 'pluck'): this {
    this.mustRead();
    this.mode = mode;
    this.s.setReturnArrays(mode !== 'rows');
    return this;
  }

  private mustRead(): void {
    if (!this.reader) throw new TypeError('This statement does not return data. Use run() instead');
  }

  private out(row: unknown): unknown {
    if (this.mode === 'pluck') return buffer((row as unknown[])[0]);
    if (this.mode === 'raw') {
      const a = row as unknown[];
      for (let i = 0; i < a.length; i++) if (a[i] instanceof Uint8Array) a[i] = buffer(a[i]);
      return a;
    }
    const o = row as Record<string, unknown>;
    for (const k in o) if (o[k] instanceof Uint8Array) o[k] = buffer(o[k]);
    return o;
  }
}

type TransactionFn = ((...args: unknown[]) => unknown) & { deferred: TransactionFn; immediate: TransactionFn; exclusive: TransactionFn; default: TransactionFn };

/** A better-sqlite3-shaped Database over this Node's node:sqlite (only where sqlite-binding.ts found one). */
export class NodeSqliteDatabase {
  readonly name: string;
  readonly memory: boolean;
  readonly readonly: boolean;
  private readonly db: NodeSqliteDb;

  constructor(filename = '', options: { readonly?: boolean; fileMustExist?: boolean; timeout?: number } = {}) {
    this.name = filename;
    this.memory = filename === '' || filename === ':memory:';
    this.readonly = !!options.readonly;
    if (options.fileMustExist && !this.memory && !existsSync(filename)) throw new SqliteError('unable to open database file', 'SQLITE_CANTOPEN');
    if (!nodeSqlite) throw new Error(`Node ${process.version} has no node:sqlite that svc can use`);
    try {
      this.db = new nodeSqlite.DatabaseSync(this.memory ? ':memory:' : filename, { readOnly: this.readonly, timeout: options.timeout ?? 5000 });
    } catch (err) {
      throw translate(err);
    }
  }

  get open(): boolean {
    return this.db.isOpen;
  }

  get inTransaction(): boolean {
    return this.db.isOpen && this.db.isTransaction;
  }

  prepare(sql: string): Statement {
    let s: NodeSqliteStatement;
    try {
      s = this.db.prepare(sql);
    } catch (err) {
      throw translate(err);
    }
    const first = (s as { sourceSQL?: unknown }).sourceSQL;
    if (typeof first === 'string' && first.length < sql.length && sql.startsWith(first) && !EMPTY_TAIL.test(sql.slice(first.length))) {
      throw new RangeError('The supplied SQL string contains more than one statement');
    }
    return new Statement(this.db, s, sql);
  }

  exec(sql: string): this {
    try {
      this.db.exec(sql);
    } catch (err) {
      throw translate(err);
    }
    return this;
  }

  close(): this {
    if (this.db.isOpen) this.db.close();
    return this;
  }

  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    const stmt = this.prepare(`PRAGMA ${source}`);
    if (!stmt.reader) {
      stmt.run();
      return options.simple ? undefined : [];
    }
    return options.simple ? stmt.pluck().get() : stmt.all();
  }

  /** As better-sqlite3's: BEGIN … COMMIT, a savepoint when nested, rolled back on a throw. */
  transaction(fn: (...args: unknown[]) => unknown): TransactionFn {
    const make = (begin: string): TransactionFn =>
      ((...args: unknown[]) => {
        const nested = this.inTransaction;
        this.exec(nested ? 'SAVEPOINT "svc tx"' : begin);
        try {
          const result = fn(...args);
          if (result instanceof Promise) throw new TypeError('Transaction function cannot return a promise');
          this.exec(nested ? 'RELEASE "svc tx"' : 'COMMIT');
          return result;
        } catch (err) {
          // SQLite may have rolled back by itself (out of memory, a full disk): nothing to undo then.
          if (this.inTransaction) this.exec(nested ? 'ROLLBACK TO "svc tx"; RELEASE "svc tx"' : 'ROLLBACK');
          throw err;
        }
      }) as TransactionFn;
    const t = make('BEGIN');
    t.default = t;
    t.deferred = make('BEGIN DEFERRED');
    t.immediate = make('BEGIN IMMEDIATE');
    t.exclusive = make('BEGIN EXCLUSIVE');
    return t;
  }
}
