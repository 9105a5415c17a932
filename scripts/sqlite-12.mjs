// A checkout's SQLite on a Node without a node:sqlite svc can use (Node 20, 22.12 to 22.15;
// src/db/sqlite-binding.ts): installs better-sqlite3 12 into node_modules, where src/db/sqlite.ts
// loads it. It is no dependency in package.json on purpose: npm would then fetch it on every Node
// and run its install (a download from GitHub, else a compile) on Node 22 and 24 too, which never
// load it, and fail there without a compiler. `prepare` runs this after tsc, on every `npm install`
// and `npm ci` of the checkout; where node:sqlite serves, or 12 already loads, it does nothing.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { SQLITE_12, SQLITE_PACKAGE } from '../dist/src/db/sqlite-binding.js';

if (SQLITE_PACKAGE === 'node:sqlite') process.exit(0);
const root = fileURLToPath(new URL('..', import.meta.url));
try {
  const Db = createRequire(new URL('../package.json', import.meta.url))(SQLITE_12.name);
  new Db(':memory:').close();
  process.exit(0);
} catch {
  // not installed, or not built for this Node: installed now
}
console.error(`svc: Node ${process.version} has no node:sqlite that svc can use: installing ${SQLITE_12.name} (${SQLITE_12.spec}), which compiles where no prebuilt binary downloads`);
// The npm that runs this prepare (npm_execpath), else the one on PATH. --no-save: package.json and
// package-lock.json stay as they are, the same on every Node.
const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];
const args = ['install', '--no-save', '--no-audit', '--no-fund', `${SQLITE_12.name}@${SQLITE_12.spec}`];
const r = spawnSync(npm[0], [...npm.slice(1), ...args], { cwd: root, stdio: 'inherit', shell: !process.env.npm_execpath && process.platform === 'win32' });
if (r.status !== 0) {
  console.error(
    `svc: better-sqlite3 12, svc's SQLite on Node ${process.version}, did not install. Where no prebuilt binary can be downloaded it compiles: ` +
      "it needs python3, make and a C++ compiler (Debian: apt-get install python3 make g++) and Node's headers (downloaded, or npm_config_nodedir). " +
      'Or use Node 24 (or 22.16+): SQLite is built in there and nothing compiles.',
  );
  process.exit(1);
}
