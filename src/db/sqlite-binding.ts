// Which SQLite binding the running Node uses, decided here once, without opening anything (the
// loader, src/db/sqlite.ts, opens it; scripts/sqlite-12.mjs and scripts/build-exe.mjs ask this):
//
// - node:sqlite, built into Node, wherever it has what svc needs (unflagged, with
//   StatementSync.columns() and setReturnArrays(): Node 22.16+, 24): nothing to install or compile.
// - better-sqlite3 12 under the name `better-sqlite3-12` elsewhere (Node 20.19+, 22.12 to 22.15):
//   a native addon that compiles where no prebuilt binary can be downloaded. It is no dependency
//   of the package, or npm would fetch and try to build it on every Node: a checkout installs it
//   on those Nodes (`npm install`, scripts/sqlite-12.mjs), a package install is told the command
//   (src/db/sqlite.ts).

/** The parts of node:sqlite svc uses (@types/node 20 has none of them). */
export interface NodeSqliteModule {
  DatabaseSync: new (path: string, options?: { readOnly?: boolean; timeout?: number }) => NodeSqliteDatabase;
  StatementSync: { prototype: object };
}

export interface NodeSqliteDatabase {
  prepare(sql: string): NodeSqliteStatement;
  exec(sql: string): void;
  close(): void;
  readonly isOpen: boolean;
  readonly isTransaction: boolean;
}

export interface NodeSqliteStatement {
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  columns(): { name: string; column: string | null; table: string | null; database: string | null; type: string | null }[];
  setReturnArrays(on: boolean): void;
  setReadBigInts(on: boolean): void;
}

/** better-sqlite3 12 as svc installs it, beside svc: the alias name, and the versions it accepts. */
export const SQLITE_12 = { name: 'better-sqlite3-12', spec: 'npm:better-sqlite3@^12.6.2' } as const;

/**
 * node:sqlite, if this Node has one svc can use. Node 22 prints an ExperimentalWarning when the
 * module loads: a CLI that printed it on every command would be telling the user nothing they can
 * act on, so that one warning is dropped (any other goes through).
 */
function loadNodeSqlite(): NodeSqliteModule | undefined {
  const getBuiltin = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  if (!getBuiltin) return undefined;
  const emit = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    if (/SQLite is an experimental feature/.test(typeof warning === 'string' ? warning : warning.message)) return;
    return (emit as (...a: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  let mod: NodeSqliteModule | undefined;
  try {
    mod = getBuiltin('node:sqlite') as NodeSqliteModule | undefined;
  } catch {
    mod = undefined; // a Node that knows the module but wants --experimental-sqlite (22.5 to 22.12)
  } finally {
    process.emitWarning = emit;
  }
  const proto = mod?.StatementSync?.prototype as Record<string, unknown> | undefined;
  return proto && typeof proto.columns === 'function' && typeof proto.setReturnArrays === 'function' ? mod : undefined;
}

export const nodeSqlite: NodeSqliteModule | undefined = loadNodeSqlite();

/** The binding this Node uses (see above). */
export const SQLITE_PACKAGE: 'node:sqlite' | typeof SQLITE_12.name = nodeSqlite ? 'node:sqlite' : SQLITE_12.name;
