import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The JavaScript file of a thread or child entry point next to the calling module. Under vitest a
 * module runs from src/*.ts, but a thread or a child needs JavaScript: the same path under dist/,
 * which test/global-setup.ts builds before any test starts. The repository's own src/ is the last
 * one in the path (a checkout may itself sit under a directory named src).
 */
export function compiledEntry(moduleUrl: string, file: string): URL {
  const here = new URL(file, moduleUrl);
  if (!moduleUrl.endsWith('.ts')) return here;
  const i = here.href.lastIndexOf('/src/');
  return new URL(`${here.href.slice(0, i)}/dist${here.href.slice(i)}`);
}

/** bin/svc, found upwards from the calling module (it runs from src/ in tests and from dist/ when built); null when it is not there. */
export function svcBinScript(moduleUrl: string): string | null {
  let dir = dirname(fileURLToPath(moduleUrl));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'bin', 'svc');
    if (existsSync(candidate) && existsSync(join(dir, 'package.json'))) return candidate;
    dir = dirname(dir);
  }
  return null;
}
