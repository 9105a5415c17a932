import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

// Finding the project, apart from loading it: the CLI finds the project on every command, and must
// not load the config schema (zod) to do it.

export const CONFIG_FILE = 'project.json';

/** The nearest directory upwards from `start` that holds project.json, or null. */
export function findProjectRoot(start: string): string | null {
  let dir = resolve(start);
  for (;;) {
    if (existsSync(join(dir, CONFIG_FILE))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}
