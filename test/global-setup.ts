import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { EVENT_NAMES } from '../src/events/registry.js';
import { makeEmittedDir, neverEmitted, readEmitted, removeEmittedDir } from './event-coverage.js';

const repo = fileURLToPath(new URL('..', import.meta.url));

// The CLI tests run bin/svc, which loads dist/. Build it once, before any test file starts, so no
// test runs against a stale build and none rebuilds it while another is running the CLI. The build
// is incremental (its state in dist/.tsbuildinfo, gone with dist/): a run after a small change
// recompiles what changed in about a second instead of everything in seven.
export default function setup(project: TestProject): () => void {
  const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json', '--incremental', '--tsBuildInfoFile', 'dist/.tsbuildinfo'], { cwd: repo, stdio: 'inherit' });
  const dir = makeEmittedDir();
  project.provide('emittedEventsDir', dir);
  return () => {
    try {
      checkEveryEventEmitted(project, dir);
    } finally {
      removeEmittedDir(dir);
    }
  };
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
