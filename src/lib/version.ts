import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exeBuild } from './exe.js';

/** The published name (`svc` on npm belongs to an unrelated package); the command is still `svc`. */
export const PACKAGE_NAME = 'svc-daemon';

let cached: string | undefined;

/**
 * The package version, found by walking up from this module: from src/ and dist/ in a checkout,
 * and from <prefix>/lib/node_modules/svc-daemon/dist/src/lib in a global install. The name is
 * checked so a project's own package.json above an embedded copy is never taken for ours. The
 * single executable has no package.json: its build recorded the version.
 */
export function packageVersion(): string {
  if (cached) return cached;
  const exe = exeBuild();
  if (exe) return (cached = exe.version);
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === PACKAGE_NAME && pkg.version) return (cached = pkg.version);
    } catch {
      // not here; go up
    }
    dir = dirname(dir);
  }
  return (cached = '0.0.0');
}
