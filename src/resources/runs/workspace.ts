import { spawn } from 'node:child_process';
import { readdir as readdirCb, readFile as readFileCb, stat as statCb } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { STATE_DIR } from '../../state-dir.js';
import { GIT_CONFIG, GitError, git, gitEnv, ignoreWorktrees, removeWorktreeNow, serial, WORKTREES_DIR, worktreeState, type GitTurn } from './git.js';
import { utf8Boundary } from './lines.js';
import type { SparePool } from './spares.js';

// A run's workspace: a git worktree of the project per task, on its own branch, made and read with
// the git CLI (git.ts) or, for a new worktree from a ready spare, from the repository's files
// (spares.ts). svc's git calls never touch the project's own working tree or index: they run in
// the worktree, or ask the repository about refs and worktrees. Calls that change the
// repository's list of worktrees are serialised per repository in this process (git.ts serial);
// commits and diffs run in a worktree of their own and are not.

export { GitError, WORKTREES_DIR };

// The callback forms: fs/promises keeps a FileHandle object for each operation until it is collected.
const [readdir, readFile, stat] = [promisify(readdirCb), promisify(readFileCb), promisify(statCb)];

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
  /** The runner's spare worktrees (spares.ts): a new worktree is then one of them, moved into place. */
  spares?: SparePool | null;
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
}

/**
 * The task's worktree, on its branch: reused when it is there, else made from the existing branch
 * or, with a new branch, from fromBranch or baseRef. What a crash leaves is cleared first: an
 * entry whose folder is gone, a folder git does not know, an entry locked mid-creation.
 */
export async function ensureWorktree(opts: EnsureWorktreeOptions): Promise<Worktree> {
  const dir = guardDir(opts.root, opts.dir);
  const start = opts.fromBranch ? `refs/heads/${opts.fromBranch}` : opts.baseRef;
  const made = (prefix: string, baseCommit: string): Worktree => ({ path: dir, branch: opts.branch, baseCommit, cwd: prefix ? join(dir, prefix) : dir, created: true });
  // The common case, with no git process and no wait: a new branch from the commit a ready spare sits on.
  if (opts.spares) {
    const prefix = await prefixOf(opts.root);
    let placed = opts.spares.place(dir, opts.branch, start);
    // None ready at that commit: one being made there (hurried) is ready sooner than a worktree made
    // from nothing. Any other miss (a tag, the branch exists, a folder there) is git's at once.
    const pending = placed.kind === 'none-ready' ? opts.spares.pending(placed.commit) : null;
    if (pending) placed = await pending.then(() => opts.spares!.place(dir, opts.branch, start));
    if (placed.kind === 'placed') return made(prefix, placed.commit);
  }
  return serial(resolve(opts.root), async () => {
    const prefix = await prefixOf(opts.root);
    const cwd = prefix ? join(dir, prefix) : dir;
    const branchRef = `refs/heads/${opts.branch}`;
    const state = await worktreeState(dir);
    if (state.kind === 'valid') {
      if (state.branch !== branchRef) await switchBranch(dir, opts.branch);
      return { path: dir, branch: opts.branch, baseCommit: await forkPoint(opts.root, branchRef, start), cwd, created: false };
    }
    // A folder git does not know, or knows as locked (a crash while git or svc made it: `locked` says "initializing").
    if (state.kind === 'stale') await removeWorktreeNow(opts.root, dir);
    // A spare made while this call waited in the queue.
    const placed = opts.spares?.place(dir, opts.branch, start);
    if (placed?.kind === 'placed') return made(prefix, placed.commit);
    await ignoreWorktrees(opts.root);
    const [branchCommit, startCommit] = await resolveRevs(opts.root, [branchRef, `${start}^{commit}`]);
    if (!startCommit && !branchCommit) throw new GitError(['worktree'], null, `${opts.fromBranch ? `branch ${opts.fromBranch}` : opts.baseRef} is not a commit of the repository at ${opts.root}`);
    // A new branch from another commit than the spares': a spare moved by git and switched there.
    const spare = branchCommit ? null : (opts.spares?.take(null) ?? null);
    if (spare) {
      try {
        await git(opts.root, ['worktree', 'move', spare.dir, dir]);
        await git(dir, ['switch', '--quiet', '--no-track', '-c', opts.branch, startCommit!]);
        return made(prefix, startCommit!);
      } catch {
        // A spare git would not move or switch: cleared, and the worktree made the usual way.
        for (const d of [spare.dir, dir]) await removeWorktreeNow(opts.root, d);
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
    return made(prefix, branchCommit ? await forkPoint(opts.root, branchRef, start) : startCommit!);
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

/** Removes the worktree and its folder; its branch stays (it holds the work). */
export async function removeWorktree(opts: { root: string; path: string; turn?: GitTurn }): Promise<void> {
  const dir = guardDir(opts.root, opts.path);
  const done = await opts.turn?.();
  try {
    await serial(resolve(opts.root), () => removeWorktreeNow(opts.root, dir));
  } finally {
    done?.();
  }
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
