import { watch } from 'chokidar';
import { existsSync } from 'node:fs';
import { dirname, relative, sep } from 'node:path';
import { settledWatch, type SettledWatch } from '../../lib/watch.js';

function nearestExisting(dir: string): string {
  let d = dir;
  while (!existsSync(d) && dirname(d) !== d) d = dirname(d);
  return d;
}

/**
 * Calls `onChange` (debounced) after anything changes at most two levels inside `dir`
 * (`<dir>/<skill>/SKILL.md`). chokidar reports nothing for a path that does not exist yet, nor
 * after the watched folder itself is removed and re-created, so this watches the nearest existing
 * ancestor of dir's parent and lets through only the path down to dir and dir's own contents.
 */
export function watchSkillsDir(dir: string, onChange: () => void, onError: (err: unknown) => void, debounceMs = 50): SettledWatch {
  const base = nearestExisting(dirname(dir));
  const onTheWay = (p: string) => p === base || p === dir || dir.startsWith(p.endsWith(sep) ? p : p + sep);
  const inside = (p: string) => p.startsWith(dir + sep) && p.slice(dir.length + 1).split(sep).length <= 2;
  const depth = relative(base, dir).split(sep).length + 1;

  return settledWatch(
    (schedule) =>
      watch(base, { ignoreInitial: true, depth, ignored: (p: string) => !(onTheWay(p) || inside(p)) })
        .on('all', schedule)
        .on('error', onError),
    onChange,
    debounceMs,
  );
}
