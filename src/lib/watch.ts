import type { FSWatcher } from 'chokidar';

/** A file watch that reports settled changes. */
export interface SettledWatch {
  /** Resolves when the initial crawl is done (or after a cap, so a slow disk cannot hold up start). */
  ready: Promise<void>;
  close(): Promise<void>;
}

const READY_CAP_MS = 2_000;

/**
 * Calls `onChange` once a burst of changes has settled for `debounceMs` (editors save in bursts:
 * truncate, write, rename). `start(schedule)` makes the chokidar watcher and hooks `schedule` to
 * the events that count. Until chokidar is ready an edit goes unseen, so the daemon waits for
 * `ready` before it reports that it is up.
 */
export function settledWatch(start: (schedule: () => void) => FSWatcher, onChange: () => void, debounceMs: number): SettledWatch {
  let timer: NodeJS.Timeout | undefined;
  const watcher = start(() => {
    clearTimeout(timer);
    timer = setTimeout(onChange, debounceMs);
  });
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
