import { execFile, spawn } from 'node:child_process';
import { mkdir as mkdirCb, readdir as readdirCb, readFile as readFileCb, realpath as realpathCb, rename as renameCb, rm as rmCb, stat as statCb, writeFile as writeFileCb } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { uuidv4 } from '../../lib/ids.js';
import { STATE_DIR } from '../../state-dir.js';
import { utf8Boundary } from './lines.js';

// A run's workspace: a git worktree of the project per task, on its own branch, made and read with
// the git CLI (execFile, never a shell). svc's git calls never touch the project's own working
// tree or index: they run in the worktree, or ask the repository about refs and worktrees.
// Calls that change the repository's list of worktrees are serialised per repository in this
// process (git takes no lock around `worktree add` as a whole); commits and diffs run in a
// worktree of their own and are not.
//
// Every call turns off what a person's git config may add that svc cannot answer or does not
// want: hooks (a pre-commit hook that lints, or waits for input), commit signing (a pinentry
// prompt), fsmonitor daemons (one more process per worktree), automatic gc in the background.

// The callback forms: fs/promises keeps a FileHandle object for each operation until it is collected.
const [mkdir, readdir, readFile, realpath, rename, rm, stat, writeFile] = [
  promisify(mkdirCb),
  promisify(readdirCb),
  promisify(readFileCb),
  promisify(realpathCb),
  promisify(renameCb),
  promisify(rmCb),
  promisify(statCb),
  promisify(writeFileCb),
];

export const WORKTREES_DIR = 'worktrees';

const GIT_CONFIG = ['core.hooksPath=/dev/null', 'core.fsmonitor=false', 'commit.gpgsign=false', 'gc.auto=0', 'maintenance.auto=false', 'color.ui=false'].flatMap((c) => ['-c', c]);

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
function gitEnv(extra?: Record<string, string>): NodeJS.ProcessEnv {
  if (!gitEnvCache) {
    gitEnvCache = { GIT_TERMINAL_PROMPT: '0' };
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) gitEnvCache[k] = v;
    gitEnvCache.GIT_TERMINAL_PROMPT = '0';
  }
  return extra ? { ...gitEnvCache, ...extra } : gitEnvCache;
}

interface GitOptions {
  input?: string;
  env?: Record<string, string>;
  /** Exit codes that are answers, not failures (`diff --quiet` says 1 for "there are changes"). */
  ok?: number[];
}

/** Runs git in `cwd`; resolves with its stdout and exit code. */
function git(cwd: string, args: string[], opts: GitOptions = {}): Promise<{ stdout: string; code: number }> {
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

/** One chain per repository: `fn` runs after the calls queued before it, whatever became of them. */
const queues = new Map<string, Promise<unknown>>();
function serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const run = (queues.get(key) ?? Promise.resolve()).then(fn, fn);
  const tail = run.catch(() => undefined);
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return run;
}

// --- naming ---

/** The task's short id, as the CLI prints it (the last 8 characters of its id). */
export const taskShortId = (taskId: string): string => taskId.slice(-8).replace(/[^A-Za-z0-9_-]/g, '-');

/**
 * `svc/<agent>/<task short id>`, a valid branch name whatever the agent's name holds: agent names
 * are letters, digits, ".", "_" and "-" (resources/common.ts NameSchema), and of those git refuses
 * ".." anywhere and a component ending in "." or ".lock".
 */
export function branchName(agent: string, taskId: string): string {
  const a =
    agent
      .replace(/[^A-Za-z0-9._-]/g, '-')
      .replace(/\.{2,}/g, '.')
      .replace(/\.lock$/i, '-lock')
      .replace(/\.$/, '-')
      .replace(/^[.-]/, '_') || '_';
  return `svc/${a}/${taskShortId(taskId)}`;
}

/** `<root>/.svc/worktrees/<task short id>`. */
export const worktreeDir = (root: string, taskId: string): string => join(root, STATE_DIR, WORKTREES_DIR, taskShortId(taskId));

// --- the repository ---

export type RepoInfo =
  /** Not a git repository (or git is not installed, or refuses it: another user's, say): the runner runs in place, one run at a time. */
  | { kind: 'none'; reason: string }
  | {
      kind: 'git';
      /** The repository's top folder. */
      toplevel: string;
      /** The project root's place in it ("" at the top; "packages/app/" for a project inside a monorepo). */
      prefix: string;
      /** The commit checked out (runner.baseRef's default), null in a repository without commits. */
      head: string | null;
      /** The branch checked out, null when HEAD is detached. */
      branch: string | null;
    };

export async function detectRepo(root: string): Promise<RepoInfo> {
  let top: string;
  try {
    top = (await git(root, ['rev-parse', '--show-toplevel', '--show-prefix'])).stdout;
  } catch (err) {
    // "not a git repository", "detected dubious ownership", or git missing ("spawn git ENOENT").
    return { kind: 'none', reason: (err as GitError).stderr.trim().split('\n')[0] || (err as Error).message };
  }
  const [toplevel = '', prefix = ''] = top.split('\n');
  const [head, branch] = await Promise.all([
    git(root, ['rev-parse', '-q', '--verify', 'HEAD^{commit}'], { ok: [1] }).then((r) => r.stdout.trim() || null),
    git(root, ['symbolic-ref', '-q', '--short', 'HEAD'], { ok: [1] }).then((r) => r.stdout.trim() || null),
  ]);
  return { kind: 'git', toplevel, prefix, head, branch };
}

// --- worktrees ---

export interface EnsureWorktreeOptions {
  /** The project root (a git repository or a folder inside one). */
  root: string;
  /** worktreeDir(root, taskId). */
  dir: string;
  /** branchName(agent, taskId). */
  branch: string;
  /** What a new branch starts from: a commit, a branch, a tag (runner.baseRef; default the commit checked out). */
  baseRef: string;
  /** A dependency's branch to start from instead of baseRef. */
  fromBranch?: string | null;
}

export interface Worktree {
  path: string;
  branch: string;
  /** Where the branch started: baseRef's (or fromBranch's) commit, or where an existing branch forked from it. */
  baseCommit: string;
  /** Where the agent works: the project root's place in the worktree (`path` unless the project is a folder of a larger repository). */
  cwd: string;
  /** false: an existing worktree was reused (a retry, a revision). */
  created: boolean;
  /**
   * Made from a spare with no git process before it (fromSpare): the branch is set in the
   * repository's queue meanwhile, and is there once this resolves. Absent: it is there already.
   */
  branchReady?: Promise<void>;
}

/**
 * The task's worktree, on its branch: reused when it is there, else made from the existing branch
 * or, with a new branch, from fromBranch or baseRef. What a crash leaves is cleared first: an
 * entry whose folder is gone, a folder git does not know, an entry locked mid-creation.
 */
export async function ensureWorktree(opts: EnsureWorktreeOptions): Promise<Worktree> {
  const dir = guardDir(opts.root, opts.dir);
  // A new worktree from a ready spare takes no git process and waits for none (fromSpare).
  if ((await worktreeState(dir)).kind === 'absent') {
    const prefix = await prefixOf(opts.root);
    const fast = await fromSpare(opts.root, prefix, dir, opts.branch, opts.fromBranch ? `refs/heads/${opts.fromBranch}` : opts.baseRef);
    if (fast) return { path: dir, branch: opts.branch, baseCommit: fast.commit, cwd: prefix ? join(dir, prefix) : dir, created: true, branchReady: fast.branchReady };
  }
  return serial(resolve(opts.root), async () => {
    const prefix = await prefixOf(opts.root);
    const cwd = prefix ? join(dir, prefix) : dir;
    const start = opts.fromBranch ? `refs/heads/${opts.fromBranch}` : opts.baseRef;
    const branchRef = `refs/heads/${opts.branch}`;
    const state = await worktreeState(dir);
    if (state.kind === 'valid') {
      if (state.branch !== branchRef) await switchBranch(dir, opts.branch);
      return { path: dir, branch: opts.branch, baseCommit: await forkPoint(opts.root, branchRef, start), cwd, created: false };
    }
    if (state.kind === 'stale') {
      // A folder git does not know, or knows as locked (svc never locks: a crash during `worktree add`).
      await rm(dir, { recursive: true, force: true });
      await git(opts.root, ['worktree', 'remove', '--force', '--force', dir], { ok: [128] });
    }
    await ignoreWorktrees(opts.root);
    const [branchCommit, startCommit] = await resolveRevs(opts.root, [branchRef, `${start}^{commit}`]);
    if (!startCommit && !branchCommit) throw new GitError(['worktree'], null, `${opts.fromBranch ? `branch ${opts.fromBranch}` : opts.baseRef} is not a commit of the repository at ${opts.root}`);
    // A new branch from another commit than the spare's: the spare moved by git and switched there.
    if (!branchCommit) {
      const spare = await takeSpare(opts.root, true);
      if (spare) {
        try {
          await git(opts.root, ['worktree', 'move', spare, dir]);
          await git(dir, ['switch', '--quiet', '--no-track', '-c', opts.branch, startCommit!]);
          return { path: dir, branch: opts.branch, baseCommit: startCommit!, cwd, created: true };
        } catch {
          // A spare git would not move or switch: cleared, and the worktree made the usual way.
          for (const d of [spare, dir]) await git(opts.root, ['worktree', 'remove', '--force', '--force', d], { ok: [128] });
          await rm(dir, { recursive: true, force: true });
        } finally {
          sparesBusy.delete(spare);
        }
      }
    }
    const add = branchCommit ? ['worktree', 'add', '--quiet', dir, opts.branch] : ['worktree', 'add', '--quiet', '--no-track', '-b', opts.branch, dir, startCommit!];
    try {
      await git(opts.root, add);
    } catch (err) {
      // An entry whose folder is gone ("missing but already registered"): cleared, then once more.
      const cleared = await git(opts.root, ['worktree', 'remove', '--force', '--force', dir], { ok: [128] });
      if (cleared.code !== 0) throw err;
      await git(opts.root, add);
    }
    const baseCommit = branchCommit ? await forkPoint(opts.root, branchRef, start) : startCommit!;
    return { path: dir, branch: opts.branch, baseCommit, cwd, created: true };
  });
}

// --- spare worktrees: made ahead of time, so that a run's worktree is a rename and a branch away ---

/** Spares are folders of .svc/worktrees/ with this prefix (a dot: the cleanup never lists them). */
const SPARE_PREFIX = '.spare-';

/**
 * A commit read from the repository's files, for the few refs a run starts from (HEAD, a branch):
 * undefined when it cannot be told that way (a worktree or submodule's .git file, reftable, a
 * symbolic ref of another kind, a ref of another shape): the caller asks git instead.
 */
async function commitOfRef(gitDir: string, ref: string): Promise<string | null | undefined> {
  const HASH = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;
  if (await exists(join(gitDir, 'reftable'))) return undefined;
  if (ref === 'HEAD') {
    const head = (await readFile(join(gitDir, 'HEAD'), 'utf8').catch(() => '')).trim();
    if (HASH.test(head)) return head;
    return head.startsWith('ref: refs/heads/') ? commitOfRef(gitDir, head.slice(5)) : undefined;
  }
  if (!/^refs\/heads\/[\w./-]+$/.test(ref) || ref.includes('..')) return undefined;
  const loose = (await readFile(join(gitDir, ref), 'utf8').catch(() => null))?.trim();
  if (loose !== undefined) return HASH.test(loose) ? loose : undefined;
  const packed = await readFile(join(gitDir, 'packed-refs'), 'utf8').catch(() => '');
  for (const line of packed.split('\n')) if (line.endsWith(` ${ref}`) && HASH.test(line.slice(0, line.indexOf(' ')))) return line.slice(0, line.indexOf(' '));
  return null;
}

/**
 * The common case made quick (dispatch latency): a new branch from the commit a spare sits on,
 * both told from the repository's files. The spare is moved into place as `git worktree move`
 * does it (the folder renamed, the repository's entry told its new place), with no git process;
 * the branch is made by git in the repository's queue while the CLI starts (it touches no file
 * of the checkout). Null when any of it is not so: the caller makes the worktree with git.
 */
async function fromSpare(root: string, prefix: string, dir: string, branch: string, start: string): Promise<{ commit: string; branchReady: Promise<void> } | null> {
  const top = prefix
    ? resolve(
        root,
        ...prefix
          .split('/')
          .filter(Boolean)
          .map(() => '..'),
      )
    : root;
  const gitDir = join(top, '.git');
  try {
    if (!(await stat(gitDir)).isDirectory()) return null;
  } catch {
    return null;
  }
  const [startCommit, branchCommit] = await Promise.all([commitOfRef(gitDir, start), commitOfRef(gitDir, `refs/heads/${branch}`)]);
  if (!startCommit || branchCommit !== null) return null;
  const spare = await takeSpare(root, false);
  if (!spare) return null;
  try {
    const link = (await readFile(join(spare, '.git'), 'utf8')).trim();
    const admin = link.startsWith('gitdir: ') ? link.slice('gitdir: '.length) : '';
    if (!isAbsolute(admin) || (await readFile(join(admin, 'HEAD'), 'utf8')).trim() !== startCommit) return null;
    await rename(spare, dir);
    // Written whole (a git process reading the worktrees meanwhile never sees half of it).
    await writeFile(join(admin, 'gitdir.svc-tmp'), `${join(dir, '.git')}\n`);
    await rename(join(admin, 'gitdir.svc-tmp'), join(admin, 'gitdir'));
  } catch {
    return null;
  } finally {
    sparesBusy.delete(spare);
  }
  const branchReady = serial(resolve(root), () => git(dir, ['switch', '--quiet', '--no-track', '-c', branch]).then(() => undefined));
  return { commit: startCommit, branchReady };
}

/**
 * Spares of this process in the making (not to be taken, nor taken for broken) or being taken
 * (by one caller only): the fast path runs outside the repository's queue.
 */
const sparesBusy = new Set<string>();

/**
 * A spare that is a valid worktree, claimed for the caller (release it with sparesBusy.delete when
 * it was not used), or null. `clear`: remove the broken ones a crash left (only inside serial()).
 */
async function takeSpare(root: string, clear: boolean): Promise<string | null> {
  const base = join(root, STATE_DIR, WORKTREES_DIR);
  let names: string[];
  try {
    names = (await readdir(base)).filter((n) => n.startsWith(SPARE_PREFIX));
  } catch {
    return null;
  }
  for (const name of names) {
    const dir = join(base, name);
    if (sparesBusy.has(dir)) continue;
    sparesBusy.add(dir);
    if ((await worktreeState(dir)).kind === 'valid') return dir;
    if (clear) {
      await rm(dir, { recursive: true, force: true });
      await git(root, ['worktree', 'remove', '--force', '--force', dir], { ok: [128] });
    }
    sparesBusy.delete(dir);
  }
  return null;
}

/** How many spares are kept: one ready while the next is made. */
const SPARES = 2;

/**
 * Keeps SPARES spare worktrees ready (detached at the checked-out commit; a run's branch later
 * starts wherever it must). Made in the repository's queue after what waits there; a new
 * worktree from a ready spare never waits for it (fromSpare). A failure only means the next
 * worktree is made the usual way. Resolves once they are there (or could not be made).
 */
export function keepSpare(root: string): Promise<void> {
  return serial(resolve(root), async () => {
    const base = join(root, STATE_DIR, WORKTREES_DIR);
    let have = 0;
    try {
      have = (await readdir(base)).filter((n) => n.startsWith(SPARE_PREFIX)).length;
    } catch {
      // no folder yet: made below
    }
    await ignoreWorktrees(root);
    for (; have < SPARES; have++) {
      const dir = join(base, `${SPARE_PREFIX}${uuidv4()}`);
      sparesBusy.add(dir);
      try {
        await git(root, ['worktree', 'add', '--quiet', '--detach', dir, 'HEAD']).catch(() => rm(dir, { recursive: true, force: true }));
      } finally {
        sparesBusy.delete(dir);
      }
    }
  });
}

/** The project root's place in its repository, asked once per root (it does not change while the daemon runs). */
const prefixes = new Map<string, Promise<string>>();
function prefixOf(root: string): Promise<string> {
  const key = resolve(root);
  let p = prefixes.get(key);
  if (!p) {
    p = git(root, ['rev-parse', '--show-prefix']).then((r) => r.stdout.trim());
    p.catch(() => prefixes.delete(key));
    prefixes.set(key, p);
  }
  return p;
}

/** `dir`, absolute; refused outside <root>/.svc/worktrees/ (an argument gone wrong must not cost a folder). */
function guardDir(root: string, dir: string): string {
  const base = resolve(root, STATE_DIR, WORKTREES_DIR);
  const abs = resolve(dir);
  const rel = relative(base, abs);
  if (!rel || rel.startsWith('..') || isAbsolute(rel) || rel.includes(sep)) throw new Error(`a worktree must be a folder of ${base}, not ${dir}`);
  return abs;
}

type WorktreeState = { kind: 'absent' } | { kind: 'valid'; branch: string | null } | { kind: 'stale' };

/**
 * What is at `dir`, read from the files git keeps (no git process): its `.git` file names the
 * repository's entry for it, whose `gitdir` names it back.
 */
async function worktreeState(dir: string): Promise<WorktreeState> {
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
    return { kind: 'valid', branch: head.startsWith('ref: ') ? head.slice(5) : null };
  } catch {
    return { kind: 'stale' };
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** A reused worktree on another branch (the task went to another agent): the work goes on, on this task's branch. */
async function switchBranch(dir: string, branch: string): Promise<void> {
  const [existing] = await resolveRevs(dir, [`refs/heads/${branch}`]);
  await git(dir, existing ? ['switch', '--quiet', branch] : ['switch', '--quiet', '-c', branch]);
}

/** Commits of `revs`, null for each that names none (one git call). */
async function resolveRevs(cwd: string, revs: string[]): Promise<(string | null)[]> {
  const { stdout } = await git(cwd, ['cat-file', '--batch-check=%(objectname) %(objecttype)'], { input: revs.join('\n') + '\n' });
  return stdout
    .split('\n')
    .slice(0, revs.length)
    .map((l) => (/^[0-9a-f]{40,64} commit$/.test(l) ? l.split(' ')[0]! : null));
}

/** Where `rev` forked from `start` (their merge base), or start's commit when they share none. Asked in the project root: "HEAD" is its HEAD. */
async function forkPoint(cwd: string, rev: string, start: string): Promise<string> {
  const r = await git(cwd, ['merge-base', '--end-of-options', rev, `${start}^{commit}`], { ok: [1] });
  if (r.stdout.trim()) return r.stdout.trim();
  const [commit] = await resolveRevs(cwd, [`${start}^{commit}`]);
  if (!commit) throw new GitError(['merge-base'], 1, `${start} is not a commit`);
  return commit;
}

/**
 * The worktrees live inside the project's working tree: a `.gitignore` of `*` in their folder keeps
 * them out of the project's `git status` and `git add -A` (an embedded repository, else).
 */
async function ignoreWorktrees(root: string): Promise<void> {
  const file = join(root, STATE_DIR, WORKTREES_DIR, '.gitignore');
  if (await exists(file)) return;
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, '# svc: task worktrees, each a checkout of its own\n*\n');
}

/** Removes the worktree and its folder; its branch stays (it holds the work). */
export async function removeWorktree(opts: { root: string; path: string }): Promise<void> {
  const dir = guardDir(opts.root, opts.path);
  return serial(resolve(opts.root), async () => {
    const r = await git(opts.root, ['worktree', 'remove', '--force', '--force', dir], { ok: [128] });
    if (r.code === 0) return;
    // Not a worktree git knows (or one it will not remove, holding submodules): the folder goes, then its entry.
    await rm(dir, { recursive: true, force: true });
    await git(opts.root, ['worktree', 'remove', '--force', '--force', dir], { ok: [128] });
  });
}

export interface StaleWorktree {
  path: string;
  shortId: string;
  /** When it was last used (ms since epoch): the latest change of its index, HEAD or folder. */
  lastUsed: number;
}

/**
 * The worktrees of <root>/.svc/worktrees/ whose task is done (`isDone`, given the short id) and
 * that were last used before `olderThan` (ms since epoch): runner.keepWorkspacesHours's cleanup
 * removes them with removeWorktree.
 */
export async function staleWorktrees(opts: { root: string; olderThan: number; isDone: (shortId: string) => boolean | Promise<boolean> }): Promise<StaleWorktree[]> {
  const base = join(opts.root, STATE_DIR, WORKTREES_DIR);
  let names: string[];
  try {
    names = await readdir(base);
  } catch {
    return [];
  }
  const out: StaleWorktree[] = [];
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const path = join(base, name);
    if (!(await opts.isDone(name))) continue;
    const lastUsed = await lastUse(path);
    if (lastUsed !== null && lastUsed < opts.olderThan) out.push({ path, shortId: name, lastUsed });
  }
  return out;
}

async function lastUse(path: string): Promise<number | null> {
  const times: number[] = [];
  const at = async (p: string) => {
    try {
      times.push((await stat(p)).mtimeMs);
    } catch {
      // not there
    }
  };
  await at(path);
  if (!times.length) return null;
  try {
    const link = (await readFile(join(path, '.git'), 'utf8')).trim();
    if (link.startsWith('gitdir: ')) {
      const admin = resolve(path, link.slice('gitdir: '.length));
      await Promise.all(['index', 'HEAD', join('logs', 'HEAD')].map((f) => at(join(admin, f))));
    }
  } catch {
    // a folder git does not know: its own time says
  }
  return Math.max(...times);
}

// --- results ---

export interface CommitOptions {
  /** The worktree. */
  path: string;
  /** The agent's identity (identity.displayName / identity.email); also the committer unless `committer` says. */
  author: { name: string; email: string };
  committer?: { name: string; email: string };
  message: string;
  /** Appended as git trailers, e.g. {'Svc-Task': id, 'Svc-Run': id}. */
  trailers: Record<string, string>;
}

export interface CommitResult {
  /** The commit svc made, null when there was nothing to commit. */
  commit: string | null;
  /** The worktree's HEAD afterwards: the agent may have committed on its own. */
  head: string;
}

/**
 * Commits everything the agent changed in the worktree, new files included and ignored ones not,
 * and never a `.svc/` folder (a project's own svc state, at any depth). The identities are given
 * to git in its environment: no global git config is needed, and none is read for them.
 */
export async function commitAll(opts: CommitOptions): Promise<CommitResult> {
  await git(opts.path, ['add', '--all', '--', ':/', ':(top,exclude,glob)**/.svc/**', ':(top,exclude,glob)**/.svc']);
  const staged = await git(opts.path, ['diff', '--cached', '--quiet', '--no-ext-diff'], { ok: [1] });
  if (staged.code === 0) return { commit: null, head: (await git(opts.path, ['rev-parse', 'HEAD'])).stdout.trim() };
  const author = identity(opts.author);
  const committer = identity(opts.committer ?? opts.author);
  const env = { GIT_AUTHOR_NAME: author.name, GIT_AUTHOR_EMAIL: author.email, GIT_COMMITTER_NAME: committer.name, GIT_COMMITTER_EMAIL: committer.email };
  await git(opts.path, ['commit', '--quiet', '--no-verify', '--cleanup=whitespace', '--file=-'], { input: commitMessage(opts.message, opts.trailers), env });
  const head = (await git(opts.path, ['rev-parse', 'HEAD'])).stdout.trim();
  return { commit: head, head };
}

/** git refuses a name of nothing but punctuation, and "<", ">" and newlines would break the header. */
function identity(who: { name: string; email: string }): { name: string; email: string } {
  const clean = (s: string) => s.replace(/[<>\r\n\0]/g, '').trim();
  const name = clean(who.name);
  return { name: /[A-Za-z0-9]/.test(name) ? name : 'svc agent', email: clean(who.email) };
}

/** The message, a blank line, then one `Key: value` line per trailer (keys and values made single-line). */
export function commitMessage(message: string, trailers: Record<string, string>): string {
  const body = message.trim() || 'Work of an svc run';
  const lines = Object.entries(trailers).map(([k, v]) => `${k.replace(/[^A-Za-z0-9-]/g, '-')}: ${v.replace(/\s+/g, ' ').trim()}`);
  return lines.length ? `${body}\n\n${lines.join('\n')}\n` : `${body}\n`;
}

export interface DiffStat {
  files: number;
  added: number;
  removed: number;
}

/** Files changed and lines added and removed between two commits (a binary file counts as a file, with no lines). */
export async function diffStat(opts: { path: string; baseCommit: string; headCommit: string }): Promise<DiffStat> {
  const { stdout } = await git(opts.path, ['diff', '--numstat', '-z', '-M', '--no-ext-diff', '--no-textconv', '--end-of-options', opts.baseCommit, opts.headCommit, '--']);
  return parseNumstat(stdout);
}

/** `git diff --numstat -z`: "added\tremoved\tpath\0", or for a rename "added\tremoved\t\0from\0to\0"; "-" for a binary file. */
export function parseNumstat(out: string): DiffStat {
  const parts = out.split('\0');
  const stat: DiffStat = { files: 0, added: 0, removed: 0 };
  for (let i = 0; i < parts.length; i++) {
    const rec = parts[i]!;
    if (!rec) continue;
    const [a = '', r = '', path = ''] = rec.split('\t');
    if (path === '') i += 2; // a rename: the two paths follow
    stat.files++;
    if (/^\d+$/.test(a)) stat.added += Number(a);
    if (/^\d+$/.test(r)) stat.removed += Number(r);
  }
  return stat;
}

/**
 * The patch between two commits, at most `maxBytes` of it (cut at a line end where there is one):
 * git is stopped once that much is read, so a huge diff costs no more than the bound.
 */
export function diffPatch(opts: { path: string; baseCommit: string; headCommit: string; maxBytes: number }): Promise<{ patch: string; truncated: boolean }> {
  return new Promise((resolvePatch, reject) => {
    const args = [...GIT_CONFIG, 'diff', '-M', '--no-color', '--no-ext-diff', '--end-of-options', opts.baseCommit, opts.headCommit, '--'];
    const child = spawn('git', args, { cwd: opts.path, env: gitEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      if (truncated) return;
      if (size + c.length > opts.maxBytes) {
        chunks.push(c.subarray(0, opts.maxBytes - size));
        size = opts.maxBytes;
        truncated = true;
        child.kill();
        return;
      }
      chunks.push(c);
      size += c.length;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4096)));
    child.on('error', reject);
    child.on('close', (code) => {
      if (!truncated && code !== 0) return reject(new GitError(['diff'], code, stderr));
      const buf = Buffer.concat(chunks, size);
      if (!truncated) return resolvePatch({ patch: buf.toString('utf8'), truncated });
      const nl = buf.lastIndexOf(10);
      const end = nl >= 0 ? nl + 1 : utf8Boundary(buf, buf.length);
      resolvePatch({ patch: buf.toString('utf8', 0, end), truncated });
    });
  });
}
