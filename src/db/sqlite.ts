import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

// The one place that loads better-sqlite3: the state database, the data workers, doctor, the tests
// and the benchmarks all take it from here. Which of the two installed versions is loaded depends on
// the Node that runs:
//
// - better-sqlite3 13 (the `better-sqlite3` dependency) is a Node-API 10 addon, prebuilt in its npm
//   package (Linux with glibc or musl, macOS, Windows; x64 and arm64): nothing compiles, one binary
//   serves Node 22 and 24. Node 20 offers Node-API 9 only and crashes (SIGSEGV) while refusing the
//   module, so it must never load it.
// - better-sqlite3 12 (the optional `better-sqlite3-12` alias) is Node 20's: its install downloads a
//   binary for the running Node's ABI from GitHub, or else compiles against that Node's headers.
//   On Node 24 it must not be loaded: it derives from node::ObjectWrap, whose Node 24 header
//   registers a cleanup hook per object and removes it in the destructor, which needs the current
//   Environment; V8 runs that destructor from a GC weak callback, where there is none, and Node
//   aborts ("Assertion failed: (env) != nullptr" under Statement::~Statement) the first time a
//   young statement is collected.
//
// The choice is by the Node-API version the running Node offers (process.versions.napi): 10 or more
// (Node 22.14+, 24) loads 13; less (Node 20, 22.12 and 22.13) loads 12.

/** The package this Node loads: its Node-API version decides (see above). */
export const SQLITE_PACKAGE: 'better-sqlite3' | 'better-sqlite3-12' =
  Number(process.versions.napi ?? 0) >= 10 ? 'better-sqlite3' : 'better-sqlite3-12';

function load(): typeof BetterSqlite3 {
  const require = createRequire(import.meta.url);
  try {
    const Db = require(SQLITE_PACKAGE) as typeof BetterSqlite3;
    // Its native addon is loaded by the first database: opened here, so that a package installed
    // without its build (scripts skipped, a failed compile) is told apart now, with the fix.
    new Db(':memory:').close();
    return Db;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const missing = err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(SQLITE_PACKAGE);
    const unbuilt = /Could not locate the bindings file|better_sqlite3\.node/.test(String(err.message));
    if (!missing && !unbuilt) throw e;
    const why =
      SQLITE_PACKAGE === 'better-sqlite3-12'
        ? `On Node ${process.version} svc uses better-sqlite3 12, which npm downloads prebuilt or else compiles (with python3, make and a C++ compiler), and leaves out when neither works. ` +
          'Run `npm rebuild better-sqlite3-12` in svc\'s folder to see why, or use Node 22.14+ or 24, where the prebuilt better-sqlite3 13 needs no compiler.'
        : `On Node ${process.version} svc uses better-sqlite3 13, a dependency that is not installed or has no binary for this platform: run \`npm install\` in svc's folder.`;
    throw new Error(`SQLite is not available: ${why}`, { cause: e });
  }
}

const Database: typeof BetterSqlite3 = load();

// The types are @types/better-sqlite3's, the same for both versions (13 adds to 12's API, and svc
// uses only what both have).
// eslint-disable-next-line @typescript-eslint/no-namespace
declare namespace Database {
  type Database = BetterSqlite3.Database;
  type Statement<BindParameters extends unknown[] | {} = unknown[], Result = unknown> = BetterSqlite3.Statement<BindParameters, Result>;
  type Options = BetterSqlite3.Options;
  type RunResult = BetterSqlite3.RunResult;
  type SqliteError = BetterSqlite3.SqliteError;
}

export default Database;
