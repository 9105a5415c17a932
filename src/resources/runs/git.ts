import { execFile } from 'node:child_process';
import { mkdir as mkdirCb, readFile as readFileCb, realpath as realpathCb, rm as rmCb, stat as statCb, writeFile as writeFileCb } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { STATE_DIR } from '../../state-dir.js';

// The git CLI as the runner calls it (execFile, never a shell): the configuration every call
// turns off, the environment it runs in, its errors, and the per-repository queue of the calls
// that change the repository's list of worktrees; and what a worktree's files say of it.
// workspace.ts and spares.ts build on it.
//
// Every call turns off what a person's git config may add that svc cannot answer or does not
// want: hooks (a pre-commit hook that lints, or waits for input), commit signing (a pinentry
// prompt), fsmonitor daemons (one more process per worktree), automatic gc in the background.

export const GIT_CONFIG = ['core.hooksPath=/dev/null', 'core.fsmonitor=false', 'commit.gpgsign=false', 'gc.auto=0', 'maintenance.auto=false', 'color.ui=false'].flatMap((c) => ['-c', c]);

/** git failed: `stderr` is its own words. */
export class GitError extends Error {
  constructor(
    readonly args: string[],
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`git ${args[0] ?? ''} failed${exitCode === null ? '' : ` (exit ${exitCode})`}: ${stderr.trim() || 'no message'}`);
  }
}

let gitEnvCache: NodeJS.ProcessEnv | null = null;

/** The daemon's environment without GIT_* (GIT_DIR or GIT_INDEX_FILE of a hook svc runs under would point git elsewhere). */
export function gitEnv(extra?: Record<string, string>): NodeJS.ProcessEnv {
  if (!gitEnvCache) {
    gitEnvCache = { GIT_TERMINAL_PROMPT: '0' };
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) gitEnvCache[k] = v;
  }
  return extra ? { ...gitEnvCache, ...extra } : gitEnvCache;
}

/**
 * Waits for a piece of git work's turn and resolves with the function that ends it: work that can
 * wait (a finished run's commit, a spare worktree, a cleanup) is not started while a run is being
 * dispatched, and only so much at once (dispatch-gate.ts).
 */
export type GitTurn = () => Promise<() => void>;

export interface GitOptions {
  input?: string;
  env?: Record<string, string>;
  /** Exit codes that are answers, not failures (`diff --quiet` says 1 for "there are changes"). */
  ok?: number[];
}

/** Runs git in `cwd`; resolves with its stdout and exit code. */
export function git(cwd: string, args: string[], opts: GitOptions = {}): Promise<{ stdout: string; code: number }> {
  return new Promise((resolveRun, reject) => {
    const child = execFile('git', [...GIT_CONFIG, ...args], { cwd, env: gitEnv(opts.env), maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (!err) return resolveRun({ stdout, code: 0 });
      const code = typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null;
      if (code !== null && opts.ok?.includes(code)) return resolveRun({ stdout, code });
      reject(new GitError(args, code, stderr || err.message));
    });
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(opts.input ?? '');
  });
}

/**
 * One chain per repository (its resolved root): `fn` runs after the calls queued before it,
 * whatever became of them. git takes no lock around `worktree add` as a whole: calls that change
 * the list of worktrees go through here.
 */
const queues = new Map<string, Promise<unknown>>();
export function serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const run = (queues.get(key) ?? Promise.resolve()).then(fn, fn);
  const tail = run.catch(() => undefined);
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return run;
}

/**
 * Removes the worktree at `dir`, folder and entry, whatever state it is in: `git worktree remove`
 * (forced twice: changes and a lock are no reason to keep it), or for a folder git does not know
 * (or one it will not remove, holding submodules) the folder first, then its entry if any. Callers
 * run it in serial().
 */
export async function removeWorktreeNow(root: string, dir: string): Promise<void> {
  const r = await git(root, ['worktree', 'remove', '--force', '--force', dir], { ok: [128] });
  if (r.code === 0) return;
  await rm(dir, { recursive: true, force: true });
  await git(root, ['worktree', 'remove', '--force', '--force', dir], { ok: [128] });
}

// --- a worktree's files

// The callback forms: fs/promises keeps a FileHandle object for each operation until it is collected.
const [mkdir, readFile, realpath, rm, stat, writeFile] = [promisify(mkdirCb), promisify(readFileCb), promisify(realpathCb), promisify(rmCb), promisify(statCb), promisify(writeFileCb)];

export const WORKTREES_DIR = 'worktrees';

export type WorktreeState = { kind: 'absent' } | { kind: 'valid'; branch: string | null; admin: string; head: string } | { kind: 'stale' };

/**
 * What is at `dir`, read from the files git keeps (no git process): its `.git` file names the
 * repository's entry for it (`admin`), whose `gitdir` names it back; `head` is that entry's HEAD
 * (a commit, or `ref: <branch>`).
 */
export async function worktreeState(dir: string): Promise<WorktreeState> {
  try {
    await stat(dir);
  } catch {
    return { kind: 'absent' };
  }
  try {
    const link = (await readFile(join(dir, '.git'), 'utf8')).trim();
    if (!link.startsWith('gitdir: ')) return { kind: 'stale' };
    const admin = resolve(dir, link.slice('gitdir: '.length));
    const back = (await readFile(join(admin, 'gitdir'), 'utf8')).trim();
    // Compared as real paths: git may have written the link through a symlinked folder (/tmp on macOS).
    const [named, own] = await Promise.all([realpath(resolve(admin, back)), realpath(join(dir, '.git'))]);
    if (named !== own) return { kind: 'stale' };
    if (await exists(join(admin, 'locked'))) return { kind: 'stale' };
    const head = (await readFile(join(admin, 'HEAD'), 'utf8')).trim();
    return { kind: 'valid', branch: head.startsWith('ref: ') ? head.slice(5) : null, admin, head };
  } catch {
    return { kind: 'stale' };
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The worktrees live inside the project's working tree: a `.gitignore` of `*` in their folder keeps
 * them out of the project's `git status` and `git add -A` (an embedded repository, else).
 */
export async function ignoreWorktrees(root: string): Promise<void> {
  const file = join(root, STATE_DIR, WORKTREES_DIR, '.gitignore');
  if (await exists(file)) return;
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, '# svc: task worktrees, each a checkout of its own\n*\n');
}
