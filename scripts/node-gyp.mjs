// npm's node-gyp in this checkout (.npmrc: `node-gyp=scripts/node-gyp.mjs`). npm runs it, as
// `node "$npm_config_node_gyp" ARGS`, wherever a dependency's install script builds a native addon,
// and it builds only what the running Node loads; everything else goes to npm's own node-gyp.
//
// - A package that says `"gypfile": false` ships its binaries and asks npm not to add its default
//   `node-gyp rebuild` install script. npm honours that when it resolves the package from the
//   registry (so `npm install -g ./svc-daemon-*.tgz` is unaffected), but not when it installs from
//   package-lock.json, whose entries do not record `gypfile` (npm/cli#9837): for better-sqlite3 13
//   it then runs node-gyp, which needs Python, make, a C++ compiler and Node's headers (downloaded
//   from nodejs.org) to build nothing. That script is skipped here, as npm meant to.
// - better-sqlite3 12 (the dev dependency `better-sqlite3-12`) is the SQLite of the Nodes whose
//   Node-API is older than 10 (Node 20, 22.12, 22.13), where src/db/sqlite.ts loads it: built there
//   (compiled where prebuild-install has found no binary), and skipped on Node 22.14+ and 24, which
//   load 13's prebuilt binary and never 12.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const args = process.argv.slice(2);
const env = process.env;
let pkg = {};
try {
  pkg = JSON.parse(readFileSync('package.json', 'utf8')); // npm runs install scripts in the package's folder
} catch {
  // not in a package (node-gyp run by hand): nothing to decide
}
const id = `${pkg.name}@${pkg.version}`;
const installing = env.npm_lifecycle_event === 'install';
// The same test as SQLITE_PACKAGE in src/db/sqlite.ts.
const loadsSqlite13 = Number(process.versions.napi ?? 0) >= 10;
const sqlite12 = pkg.name === 'better-sqlite3' && Number(String(pkg.version).split('.')[0]) < 13;

if (installing && env.npm_lifecycle_script === 'node-gyp rebuild' && pkg.gypfile === false) {
  console.error(`svc: ${id} ships prebuilt binaries ("gypfile": false); npm's default node-gyp rebuild skipped (npm/cli#9837)`);
  process.exit(0);
}
if (installing && sqlite12 && loadsSqlite13) {
  console.error(`svc: ${id} not built: Node ${process.version} (Node-API ${process.versions.napi}) loads better-sqlite3 13's prebuilt binary`);
  process.exit(0);
}

let gyp;
try {
  // npm_execpath is npm's own npm-cli.js: its node-gyp is the one npm would have run.
  gyp = createRequire(env.npm_execpath || import.meta.url).resolve('node-gyp/bin/node-gyp.js');
} catch {
  console.error('svc: npm\'s node-gyp was not found beside npm (npm_execpath); run this through npm');
  process.exit(1);
}
const { status, signal } = spawnSync(process.execPath, [gyp, ...args], { stdio: 'inherit' });
if (status !== 0 && installing && sqlite12) {
  console.error(
    `svc: ${id}, the SQLite of Node ${process.version} (Node-API ${process.versions.napi}), did not compile. ` +
      'It needs python3, make and a C++ compiler (Debian: apt-get install python3 make g++) and Node\'s headers (downloaded, or `npm_config_nodedir`); ' +
      'then run `npm rebuild better-sqlite3-12`. Node 24 or 22.14+ need none of them: svc loads the prebuilt better-sqlite3 13 there.',
  );
}
process.exit(status ?? (signal ? 1 : 0));
