import type { App } from '../../app.js';
import { isPostgres } from '../../db/open.js';
import { AppError } from '../../kernel/errors.js';
import { systemClock } from '../../lib/clock.js';
import { detectRuntime } from './drivers/detect.js';
import { driverFor } from './drivers/index.js';
import * as store from './store.js';
import { RUNTIME_KINDS } from './types.js';
import * as git from './workspace.js';

// What the runs routes read beyond the runs themselves: a run's diff from git, the runners, and
// the agent CLIs this daemon finds.

/** How much of a run's diff GET /runs/{id}/diff answers. */
const DIFF_MAX_BYTES = 1024 * 1024;

export async function readDiff(app: App, runId: string) {
  const run = await store.readRun(app.db, runId);
  if (!run) throw new AppError('not_found', `Run "${runId}" not found.`);
  const out = { runId, branch: run.branch, baseCommit: run.baseCommit, headCommit: run.headCommit, diffStat: run.diffStat, patch: '', truncated: false };
  if (!run.baseCommit || !run.headCommit) return out;
  // The branch's commits live in the project's repository whether or not the worktree is still there.
  const d = await git.diffPatch({ path: app.root, baseCommit: run.baseCommit, headCommit: run.headCommit, maxBytes: DIFF_MAX_BYTES });
  return { ...out, patch: d.patch, truncated: d.truncated };
}

export async function readRunners(app: App) {
  // Presence is wall-clock time (runner.ts): compared as such.
  const now = systemClock.now();
  // Alone on a SQLite state, the daemon is the one runner and writes no presence: it is seen now.
  const alone = !isPostgres(app.db);
  return Promise.all(
    (await store.readRunners(app.db)).map(async (r) => ({
      id: r.id,
      host: r.host,
      pid: Number(r.pid),
      labels: JSON.parse(r.labels) as string[],
      runtimes: JSON.parse(r.runtimes) as { kind: (typeof RUNTIME_KINDS)[number]; path: string; version: string | null }[],
      capacity: Number(r.capacity),
      running: await store.activeCount(app.db, { runner: r.id }),
      online: r.stopped_at === null && (alone || now - Number(r.seen_at) < app.config().runner.offlineAfterSec * 1000),
      startedAt: r.started_at,
      lastSeenAt: new Date(alone && r.stopped_at === null ? now : Number(r.seen_at)).toISOString(),
    })),
  );
}

/** Each agent CLI svc knows, looked for on this daemon's PATH, with the version it prints. */
export async function readRuntimes(app: App) {
  return Promise.all(
    RUNTIME_KINDS.filter((k) => k !== 'command').map(async (kind) => {
      const d = await detectRuntime(driverFor(kind), null, { PATH: app.env.PATH, cwd: app.root, env: app.env });
      return { kind, command: driverFor(kind).defaultCommand!, path: d.path, version: d.version, error: d.error };
    }),
  );
}
