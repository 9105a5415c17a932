import { watch } from 'chokidar';
import { join } from 'node:path';
import { settledWatch, type SettledWatch } from '../lib/watch.js';
import { CONFIG_FILE, loadConfig, type LoadResult } from './load.js';

/**
 * Watches project.json and reports each settled change. Editors save in bursts (truncate, write,
 * rename), so changes are debounced briefly; the result is reported whether valid or not and the
 * caller decides what to keep.
 */
export function watchConfig(root: string, onChange: (result: LoadResult) => void, onError: (err: unknown) => void, debounceMs = 75): SettledWatch {
  const file = join(root, CONFIG_FILE);
  // chokidar emits 'error' (EMFILE, ENOSPC, EACCES); unhandled, Node would throw it.
  return settledWatch(
    (schedule) => watch(file, { ignoreInitial: true, atomic: true }).on('add', schedule).on('change', schedule).on('unlink', schedule).on('error', onError),
    () => onChange(loadConfig(root)),
    debounceMs,
  );
}
