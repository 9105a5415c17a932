import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import { NodeSqliteDatabase } from './node-sqlite.js';
import { nodeSqlite, SQLITE_12, SQLITE_PACKAGE } from './sqlite-binding.js';

// The one place that loads SQLite: the state database, the data workers, doctor, the tests and the
// benchmarks all take it from here, with better-sqlite3's API whichever binding runs
// (src/db/sqlite-binding.ts says which):
//
// - node:sqlite on Node 22.16+ and 24, through node-sqlite.ts. Built into Node, so nothing is
//   installed or compiled: `npm install` of a checkout or of the package needs no compiler, no
//   Python and no download but the npm registry's. (better-sqlite3 13, which svc loaded there
//   before, ships prebuilt binaries, but npm runs `node-gyp rebuild` for it whenever it installs
//   from a lockfile, npm/cli#9837, and so compiles, or fails without a compiler, on every
//   `npm install` of a checkout.)
// - better-sqlite3 12 on Node 20 (and 22.12 to 22.15), under the name `better-sqlite3-12`. Its
//   install downloads a binary for the running Node from GitHub or else compiles. It must not be
//   loaded on Node 24: it derives from node::ObjectWrap, whose Node 24 header registers a cleanup
//   hook per object and removes it in the destructor, which needs the current Environment; V8
//   runs that destructor from a GC weak callback, where there is none, and Node aborts
//   ("Assertion failed: (env) != nullptr" under Statement::~Statement) the first time a young
//   statement is collected. Node 24 has node:sqlite, so it never does.

export { SQLITE_PACKAGE };

/** Where svc is: its package folder (dist/src/db/ is three levels down). */
const svcDir = (): string => join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/**
 * The command that installs better-sqlite3 12 (or builds it, when it is there unbuilt) where svc's
 * require() finds it: in a checkout, its own `npm install` (scripts/sqlite-12.mjs runs in its
 * prepare); beside an installed package, in the folder whose node_modules holds svc: a global
 * prefix, or the project that depends on svc.
 */
export function sqlite12Fix(dir: string, unbuilt: boolean, platform: NodeJS.Platform = process.platform): string {
  const verb = unbuilt ? 'rebuild' : 'install';
  const target = unbuilt ? SQLITE_12.name : `${SQLITE_12.name}@${SQLITE_12.spec}`;
  const parent = dirname(dir);
  if (basename(parent) !== 'node_modules') return `cd ${quote(dir)} && npm ${unbuilt ? `rebuild ${target}` : 'install'}`;
  const holder = dirname(parent);
  // npm's global layout: <prefix>/lib/node_modules on Linux and macOS, <prefix>/node_modules on Windows.
  if (platform !== 'win32' && basename(holder) === 'lib') return `npm ${verb} -g --prefix ${quote(dirname(holder))} ${target}`;
  return `npm ${verb} --prefix ${quote(holder)} ${target}`;
}

const quote = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

function load(): typeof BetterSqlite3 {
  if (nodeSqlite) return NodeSqliteDatabase as unknown as typeof BetterSqlite3;
  const require = createRequire(import.meta.url);
  try {
    const Db = require(SQLITE_12.name) as typeof BetterSqlite3;
    // Its native addon is loaded by the first database: opened here, so that a package installed
    // without its build (scripts skipped, a failed compile) is told apart now, with the fix.
    new Db(':memory:').close();
    return Db;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const missing = err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(SQLITE_12.name);
    const unbuilt = /Could not locate the bindings file|better_sqlite3\.node/.test(String(err.message));
    if (!missing && !unbuilt) throw e;
    const fix = sqlite12Fix(svcDir(), unbuilt);
    throw new Error(
      `SQLite is not available: Node ${process.version} has no node:sqlite that svc can use, and better-sqlite3 12, svc's SQLite on it, is ${unbuilt ? 'installed but not built' : 'not installed'}. ` +
        `Use Node 24 (or 22.16+), where SQLite is built in and nothing is installed; or ${unbuilt ? 'build' : 'install'} it with \`${fix}\` ` +
        '(it downloads a prebuilt binary from GitHub, or else compiles: python3, make and a C++ compiler).',
      { cause: e },
    );
  }
}

const Database: typeof BetterSqlite3 = load();

// The types are @types/better-sqlite3's, for both bindings (node-sqlite.ts gives what svc uses).
// eslint-disable-next-line @typescript-eslint/no-namespace
declare namespace Database {
  type Database = BetterSqlite3.Database;
  type Statement<BindParameters extends unknown[] | {} = unknown[], Result = unknown> = BetterSqlite3.Statement<BindParameters, Result>;
  type Options = BetterSqlite3.Options;
  type RunResult = BetterSqlite3.RunResult;
  type SqliteError = BetterSqlite3.SqliteError;
}

export default Database;
