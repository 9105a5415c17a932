import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Temp dirs a test file makes, removed when the file ends (test/setup.ts). The temp dir is the
// run's own (TMPDIR, vitest.config.ts): the global teardown fails the run on anything left in it.

const made: string[] = [];

/** A fresh directory in the temp dir (`prefix` + random), removed after the test file. */
export function tempDir(prefix = 'svc-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes every temp dir this test file made (test/setup.ts runs it after each file). */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
