import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { EVENT_NAMES } from '../src/events/registry.js';
import { configDir } from '../src/resources/vault/master-key.js';
import { makeEmittedDir, neverEmitted, readEmitted, removeEmittedDir } from './event-coverage.js';
import { changes, homeEnv, inTestHome, leftovers, snapshot, testHome, testTmp } from './home-guard.js';
import { startTestPostgres } from './pg-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's throwaway PostgreSQL (superuser URL), or '' when the machine has none. */
    pgUrl: string;
    /** Why there is none, said once by the setup. */
    pgSkip: string;
  }
}

const repo = fileURLToPath(new URL('..', import.meta.url));

// The CLI tests run bin/svc, which loads dist/. Build it once, before any test file starts, so no
// test runs against a stale build and none rebuilds it while another is running the CLI. The build
// is incremental (its state in dist/.tsbuildinfo, gone with dist/): a run after a small change
// recompiles what changed in about a second instead of everything in seven.
export default async function setup(project: TestProject): Promise<() => void> {
  // Each project of vitest.config.ts calls this; the build, the home and the server are made once.
  const g = globalThis as { svcSetup?: Promise<{ pg: Awaited<ReturnType<typeof startTestPostgres>>; dir: string; teardown: () => void }>; svcSetupUsers?: number };
  g.svcSetupUsers = (g.svcSetupUsers ?? 0) + 1;
  const once = await (g.svcSetup ??= setupOnce(project));
  project.provide('emittedEventsDir', once.dir);
  project.provide('pgUrl', 'url' in once.pg ? once.pg.url : '');
  project.provide('pgSkip', 'skip' in once.pg ? once.pg.skip : '');
  return () => {
    g.svcSetupUsers = (g.svcSetupUsers ?? 1) - 1;
    if (g.svcSetupUsers === 0) once.teardown();
  };
}

async function setupOnce(project: TestProject): Promise<{ pg: Awaited<ReturnType<typeof startTestPostgres>>; dir: string; teardown: () => void }> {
  const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json', '--incremental', '--tsBuildInfoFile', 'dist/.tsbuildinfo'], { cwd: repo, stdio: 'inherit' });
  // The board's files too (dist/board, ~0.1 s): the browser tests load what the daemon serves.
  execFileSync(process.execPath, [fileURLToPath(new URL('../scripts/build-board.mjs', import.meta.url))], { cwd: repo, stdio: 'ignore' });
  const dir = makeEmittedDir();
  // The home is removed at the end: it is only ever the run's own dir under the temp dir (its name
  // made here, from this process's pid), never a path taken from the config, which could be a real home.
  const home = testHome();
  if (project.config.env.HOME !== home || project.config.env.SVC_CONFIG_DIR !== homeEnv(home).SVC_CONFIG_DIR) {
    throw new Error(`vitest.config.ts must give the tests the run's own home (${home}) and SVC_CONFIG_DIR, not ${project.config.env.HOME}`);
  }
  mkdirSync(home, { recursive: true });
  // The run's temp dir, named like the home (never a path from the config). Traversable by others:
  // a test's PostgreSQL runs as the postgres user when the suite runs as root.
  const tmp = testTmp();
  if (project.config.env.TMPDIR !== tmp) throw new Error(`vitest.config.ts must give the tests the run's own TMPDIR (${tmp}), not ${project.config.env.TMPDIR}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  chmodSync(tmp, 0o711);
  const real = realConfigDirs();
  const before = snapshot(real);
  // One real PostgreSQL for the whole run, shared by the Postgres provider's tests (pg-server.ts).
  const pg = await startTestPostgres();
  if ('skip' in pg) console.warn(`\n${pg.skip}\n`);
  const teardown = () => {
    try {
      if ('stop' in pg) pg.stop();
      checkEveryEventEmitted(project, dir);
      checkRealHomeUntouched(real, before);
      checkNothingLeftInTmp(tmp);
    } finally {
      removeEmittedDir(dir);
      rmSync(home, { recursive: true, force: true });
      rmSync(tmp, { recursive: true, force: true });
    }
  };
  return { pg, dir, teardown };
}

/**
 * The svc config dirs a daemon could reach outside the run: the one the runner's own environment
 * names, and the one in the home of the user's account (where a child started with an environment
 * that lacks HOME would look).
 */
function realConfigDirs(): string[] {
  const dirs = [configDir({ ...process.env, SVC_CONFIG_DIR: undefined }), join(userInfo().homedir, '.config', 'svc')];
  // A run started by a test of another run (scripts/test-keychain.sh) has that run's home as its
  // HOME: the outer run's daemons write there meanwhile, and the outer run guards the real dirs.
  return [...new Set(dirs.map((d) => resolve(d)))].filter((d) => !inTestHome(d));
}

/**
 * Fails the run when a test left something in the run's temp dir (which is then removed all the
 * same, so the system's temp dir keeps nothing of the run). Other runs on the machine have their
 * own temp dirs: what is counted here is this run's alone.
 */
function checkNothingLeftInTmp(tmp: string): void {
  const left = leftovers(tmp);
  if (!left.length) return;
  console.error(
    `\nTemp guard: the run left ${left.length} entr${left.length === 1 ? 'y' : 'ies'} in its temp dir (${tmp}): ${left.join(', ')}.\n` +
      'A test made them and did not remove them: make them with tempDir() (test/temp.ts, removed after the file) or remove them in the test.\n',
  );
  process.exitCode = 1;
}

/** Fails the run when a test wrote to the real svc config dir (a master-key file, say). */
function checkRealHomeUntouched(dirs: string[], before: ReturnType<typeof snapshot>): void {
  const changed = changes(before, snapshot(dirs));
  if (!changed.length) return;
  console.error(
    `\nHome guard: the run changed the real svc config dir (${dirs.join(', ')}):\n  ${changed.join('\n  ')}\n` +
      "A test or a process it started reached the user's home (give it the run's environment: HOME and SVC_CONFIG_DIR, see vitest.config.ts), or another svc test run on this machine wrote there meanwhile.\n",
  );
  process.exitCode = 1;
}

/**
 * After a run of the whole suite, fails it when a catalog event was never emitted by any test.
 * A run of some files only (`vitest run test/foo.test.ts`) cannot tell, so it only says so.
 */
function checkEveryEventEmitted(project: TestProject, dir: string): void {
  const ran = new Set(project.vitest.state.getFiles().map((f) => resolve(f.filepath)));
  const all = readdirSync(join(repo, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => resolve(repo, 'test', f));
  if (!all.every((f) => ran.has(f))) return;
  const missing = neverEmitted(EVENT_NAMES, readEmitted(dir));
  if (!missing.length) return;
  console.error(
    `\nEvent coverage: ${missing.length} catalog event(s) were never emitted by any test: ${missing.join(', ')}.\n` +
      'Emit each in a test against a real daemon, or remove it from src/events/registry.ts until its feature exists.\n',
  );
  // A teardown error is only logged by vitest; the exit code is what fails `npm test` and CI.
  process.exitCode = 1;
}
