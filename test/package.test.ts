import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './temp.js';

// The package as a user gets it: `npm pack`, then `npm install -g` of the tarball into a prefix of
// its own, then the installed `svc` and two consumers built against the installed types.

const run = promisify(execFile);
const repo = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { name: string; version: string };

/**
 * The budget: 1.0.0 packs to ~525 KiB (2.0 MiB unpacked, 490 files), most of it docs/openapi.json
 * and the compiled JS with its .d.ts. About 25% headroom for growth, while shipping any of src/,
 * test/, bench/ or the source maps again (each adds 0.5 MiB or more unpacked) goes over.
 */
const BUDGET = { packedBytes: 660 * 1024, unpackedBytes: 2.5 * 1024 * 1024, files: 620 };
const ALLOWED = [/^dist\/(src|bin)\/.+\.(js|d\.ts)$/, /^dist\/board\/[a-z0-9][a-z0-9._-]*\.(html|js|css|svg)$/, /^bin\/svc$/, /^docs\/[^/]+\.(md|json)$/, /^(LICENSE|README\.md|package\.json)$/];

interface Packed {
  filename: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
  files: { path: string }[];
}

// npm runs with the user's own cache (the test home is empty): after `npm ci` it holds every
// dependency's tarball, so the install fetches little more than the registry's metadata.
const npmEnv = (more: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...process.env,
  npm_config_cache: join(userInfo().homedir, '.npm'),
  npm_config_update_notifier: 'false',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  ...more,
});

let work: string;
let packed: Packed;
let prefix: string;
let installMs = 0;

beforeAll(async () => {
  work = tempDir('svc-pkg-');
  // The global setup has just built dist/: without --ignore-scripts `prepare` would compile it again.
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: repo, env: npmEnv(), maxBuffer: 16 << 20 });
  packed = (JSON.parse(stdout) as Packed[])[0]!;
  prefix = join(work, 'prefix');
  const started = performance.now();
  // Optional dependencies are left out: better-sqlite3 12 (Node 20's SQLite, src/db/sqlite.ts)
  // compiles for a minute, and nothing tested here (--version, --help, the types) loads SQLite.
  await run('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--omit=optional', join(work, packed.filename)], {
    cwd: work,
    env: npmEnv(),
    maxBuffer: 16 << 20,
  });
  installMs = performance.now() - started;
}, 600_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the npm package', () => {
  it('ships only what a user needs, under the size budget', () => {
    console.log(
      `npm pack: ${packed.filename}, ${(packed.size / 1024).toFixed(0)} KiB packed, ${(packed.unpackedSize / 1024 / 1024).toFixed(2)} MiB unpacked, ${packed.entryCount} files` +
        ` (budget ${BUDGET.packedBytes / 1024} KiB, ${BUDGET.unpackedBytes / 1024 / 1024} MiB, ${BUDGET.files} files); npm install -g took ${(installMs / 1000).toFixed(1)} s`,
    );
    const paths = packed.files.map((f) => f.path);
    expect(paths.filter((p) => !ALLOWED.some((re) => re.test(p)))).toEqual([]);
    for (const p of ['bin/svc', 'dist/bin/svc.js', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/board/index.html', 'dist/board/app.js', 'LICENSE', 'README.md', 'docs/openapi.json']) expect(paths).toContain(p);
    expect(packed.size).toBeLessThanOrEqual(BUDGET.packedBytes);
    expect(packed.unpackedSize).toBeLessThanOrEqual(BUDGET.unpackedBytes);
    expect(packed.entryCount).toBeLessThanOrEqual(BUDGET.files);
  });

  it('installed globally from the tarball, puts a working svc on PATH that prints the package version', async () => {
    // Nothing of the checkout is reachable: only the prefix's bin and node's own dir.
    const env = { PATH: [join(prefix, 'bin'), dirname(process.execPath)].join(':'), HOME: work, NO_COLOR: '1' };
    const { stdout } = await run('svc', ['--version'], { cwd: work, env });
    expect(stdout.trim()).toBe(pkg.version);
    const help = await run('svc', ['--help'], { cwd: work, env });
    expect(help.stdout).toMatch(/serve/);
  });

  it("finds the board's files from the installed package (relative to its own module)", async () => {
    const assets = join(prefix, 'lib', 'node_modules', pkg.name, 'dist', 'src', 'resources', 'board', 'assets.js');
    const script = `import(process.argv[1]).then((m) => { const files = m.boardFiles()(); console.log(JSON.stringify(files ? [...files.keys()].sort() : null)); })`;
    const { stdout } = await run(process.execPath, ['-e', script, assets], { cwd: work });
    expect(JSON.parse(stdout)).toEqual(['app.css', 'app.js', 'icon.svg', 'index.html']);
  });

  for (const kind of ['esm', 'cjs'] as const) {
    it(`imports SvcClient and verifyWebhook with their types from ${kind === 'esm' ? 'an ES module' : 'a CommonJS'} consumer`, async () => {
      const dir = join(work, `consumer-${kind}`);
      cpSync(join(repo, 'test', 'fixtures', 'consumers', kind), dir, { recursive: true });
      mkdirSync(join(dir, 'node_modules'));
      // The package as installed from the tarball; @types/node is the user's own, here the checkout's.
      symlinkSync(join(prefix, 'lib', 'node_modules', pkg.name), join(dir, 'node_modules', pkg.name));
      symlinkSync(join(repo, 'node_modules', '@types'), join(dir, 'node_modules', '@types'));
      await run(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: dir });
      const { stdout } = await run(process.execPath, [join(dir, 'out', 'index.js')], { cwd: dir });
      expect(JSON.parse(stdout)).toEqual({ client: 'function', ok: false, format: kind === 'esm' ? 'module' : 'commonjs' });
    });
  }
});
