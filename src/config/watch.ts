import { watch } from 'chokidar';
import { join } from 'node:path';
import { CONFIG_FILE, loadConfig, type LoadResult } from './load.js';

const READY_CAP_MS = 2_000;

/**
 * Watches project.json and reports each settled change. Editors save in bursts (truncate, write,
 * rename), so changes are debounced briefly; the result is reported whether valid or not and the
 * caller decides what to keep.
 */
export function watchConfig(
  root: string,
  onChange: (result: LoadResult) => void,
  onError: (err: unknown) => void,
  debounceMs = 75,
): { ready: Promise<void>; close(): Promise<void> } {
  const file = join(root, CONFIG_FILE);
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => onChange(loadConfig(root)), debounceMs);
  };
  const watcher = watch(file, { ignoreInitial: true, atomic: true });
  // chokidar emits 'error' (EMFILE, ENOSPC, EACCES); unhandled, Node would throw it.
  watcher.on('add', schedule).on('change', schedule).on('unlink', schedule).on('error', onError);
  // Until chokidar is ready, an edit goes unseen: the daemon waits for it before it reports that it
  // is up (capped, so a slow disk cannot hold the start).
  let capTimer: NodeJS.Timeout | undefined;
  let settle!: () => void;
  const ready = new Promise<void>((resolve) => {
    settle = resolve;
    watcher.once('ready', () => resolve());
    capTimer = setTimeout(resolve, READY_CAP_MS);
  }).finally(() => clearTimeout(capTimer));
  return {
    ready,
    async close() {
      clearTimeout(timer);
      settle();
      await watcher.close();
    },
  };
}
