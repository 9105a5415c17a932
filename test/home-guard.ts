import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';

// The suite never writes to the user's home. Every test worker and every process it starts runs
// with HOME, the XDG dirs and SVC_CONFIG_DIR in a temp dir of this run (vitest.config.ts); the
// global setup checks that the real svc config dirs are as they were when the run began. No import
// from src/: vitest.config.ts loads this file.

/** The home every test worker and child process of this run sees (one per run: the runner's pid). */
export const testHome = (runnerPid: number = process.pid): string => join(tmpdir(), `svc-test-home-${runnerPid}`);

/**
 * The run's own temp dir, the TMPDIR of every test worker and of the processes they start: what a
 * test makes "in the temp dir" lands there, so the global teardown can tell this run's leftovers
 * from those of other runs on the machine, fail on them, and leave nothing in the system's.
 */
export const testTmp = (runnerPid: number = process.pid): string => join(tmpdir(), `svc-test-tmp-${runnerPid}`);

/** A path inside some run's test home (this run's, or the outer run's of a nested one): never a real config dir. */
export const inTestHome = (path: string): boolean => /[\\/]svc-test-home-\d+([\\/]|$)/.test(path);

/** What a run left in its temp dir: each entry something a test, or a process it started, made and did not remove. */
export function leftovers(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

/** The environment that points a test process's home, XDG dirs and svc config dir at `home`. */
export function homeEnv(home: string): Record<string, string> {
  return {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    XDG_CACHE_HOME: join(home, '.cache'),
    SVC_CONFIG_DIR: join(home, '.config', 'svc'),
  };
}

export type Snapshot = Map<string, string>;

/** Every entry below `dirs` with its kind, size, mode and modification time. */
export function snapshot(dirs: readonly string[]): Snapshot {
  const out: Snapshot = new Map();
  const walk = (p: string) => {
    if (!existsSync(p)) return;
    const st = lstatSync(p);
    out.set(p, `${st.isDirectory() ? 'dir' : 'file'} ${st.size} ${(st.mode & 0o7777).toString(8)} ${st.mtimeMs}`);
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(p + sep + name);
  };
  for (const d of dirs) walk(d);
  return out;
}

/** What differs between two snapshots: entries added, removed or changed. */
export function changes(before: Snapshot, after: Snapshot): string[] {
  const out: string[] = [];
  for (const [p, v] of after) {
    const was = before.get(p);
    if (was === undefined) out.push(`added ${p}`);
    else if (was !== v) out.push(`changed ${p}`);
  }
  for (const p of before.keys()) if (!after.has(p)) out.push(`removed ${p}`);
  return out.sort();
}
