import { existsSync, mkdirSync, readdir as readdirCb, realpathSync, renameSync, rm as rmCb, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { uuidv4 } from '../../lib/ids.js';
import { STATE_DIR } from '../../state-dir.js';
import { git, ignoreWorktrees, serial, WORKTREES_DIR, worktreeState, type GitTurn } from './git.js';
import { RefFiles, writeWhole } from './refs.js';

// Spare worktrees: checkouts made ahead of time, so that a new task's worktree is a folder renamed
// and a branch written, with no git process between a run's claim and its spawn (dispatch
// latency, issue 31). The pool is this daemon's (one per runner), held in memory; its spares are
// folders `.svc/worktrees/.spare-<uuid>`, detached at the commit new branches start from.
//
// How many: MIN_SPARES, more while runs come faster than spares are made (the pool doubled each
// time it runs dry) or while runs wait in the queue to start, never more than the runner's slots;
// back to MIN_SPARES at the hourly cleanup once a whole hour went without running dry. Each spare
// is a full checkout: on a large repository that is disk. MAKERS are made at once (makeDirect:
// one git process each), as soon as one is taken and the dispatch that took it has spawned its
// run: making them is what keeps dispatches quick (measured: spares that waited for the runner's
// turn behind the commits of finished runs let the pool run dry during a burst). Removing one
// waits for the runner's turn (dispatch-gate.ts).

// The callback forms: fs/promises keeps a FileHandle object for each operation until it is collected.
const [readdir, rm] = [promisify(readdirCb), promisify(rmCb)];

/** Spares are folders of .svc/worktrees/ with this prefix (a dot: the cleanup never lists them). */
export const SPARE_PREFIX = '.spare-';
/** Kept ready at the least: one taken while the next is made. */
export const MIN_SPARES = 2;
/** Spares made at once (each a git process, on a machine of a few cores). */
const MAKERS = 3;

const HASH = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

export interface Spare {
  dir: string;
  /** Its entry in the repository (.git/worktrees/<name>). */
  admin: string;
  /** The commit it is checked out at (detached). */
  commit: string;
}

export interface SparePoolOptions {
  /** The project root (a git repository or a folder inside one). */
  root: string;
  /** What new branches start from by default (runner.baseRef, else HEAD): spares are made there. */
  start(): string;
  /** The most spares kept: the runner's slots. */
  max(): number;
  /** Spares are removed in their turn (no dispatch under way)... */
  turn: GitTurn;
  /** ...and made once no dispatch is under way (its spawn first), with no turn to wait for. */
  quiet(): Promise<void>;
  /** Told what went wrong making or placing a spare (nothing is lost: the next worktree is made by git). */
  onError(err: unknown): void;
}

export class SparePool {
  private readonly ready: Spare[] = [];
  private goal = MIN_SPARES;
  /** The pool ran dry since the last shrink(). */
  private ranDry = false;
  /** Spares being made now. */
  private making = 0;
  /** Making one failed: none is made until the next take (or expect). */
  private stuck = false;
  /** Who waits for a spare being made (pending()). */
  private waiting: (() => void)[] = [];
  /** Git work under way (making, removing): close() waits for it. */
  private readonly work = new Set<Promise<void>>();
  private closed = false;
  /** The repository's ref files (null: refs kept otherwise, reftable; spares are then switched by git). */
  private files: RefFiles | null = null;
  /** Spares are made with one git process (makeDirect), not `git worktree add`. */
  private direct = false;
  private readonly key: string;
  private readonly base: string;

  constructor(private readonly o: SparePoolOptions) {
    this.key = resolve(o.root);
    this.base = join(o.root, STATE_DIR, WORKTREES_DIR);
  }

  /** Spares ready now. */
  get size(): number {
    return this.ready.length;
  }

  /** How many it keeps ready now. */
  target(): number {
    return Math.max(MIN_SPARES, Math.min(this.goal, this.o.max()));
  }

  /**
   * Finds the repository's folders, takes in the spares an earlier daemon left (valid ones; the
   * rest are removed), then fills the pool. Resolves once the spares on disk were looked at.
   */
  async open(): Promise<void> {
    // Absolute paths (git 2.31+); older git says them relative to the folder asked in.
    const dirs = await git(this.o.root, ['rev-parse', '--path-format=absolute', '--git-common-dir', '--git-dir']).catch(() => git(this.o.root, ['rev-parse', '--git-common-dir', '--git-dir']));
    const [common = '', own = ''] = dirs.stdout.split('\n');
    this.files = RefFiles.of(resolve(this.o.root, common.trim()), resolve(this.o.root, own.trim()));
    // Per-worktree configuration or a sparse checkout: `git worktree add` knows what a new worktree needs of them.
    const special = await git(this.o.root, ['config', '--get-regexp', '^(extensions\\.worktreeconfig|core\\.sparsecheckout)$'], { ok: [1] });
    this.direct = special.code === 1;
    let names: string[] = [];
    try {
      names = (await readdir(this.base)).filter((n) => n.startsWith(SPARE_PREFIX));
    } catch {
      // no folder yet
    }
    for (const name of names) {
      const dir = join(this.base, name);
      const st = await worktreeState(dir);
      if (st.kind === 'valid' && st.branch === null && HASH.test(st.head)) this.ready.push({ dir, admin: st.admin, commit: st.head });
      else await this.remove(dir);
    }
    this.refill();
  }

  /**
   * A new worktree at `dir` on new branch `branch` from `start` (HEAD or a branch), made from a
   * ready spare with no git process: the branch written at the start's commit, the spare's HEAD
   * set to it (the checkout is that commit's already), the folder renamed into place and the
   * repository's entry told its new place, as `git worktree move` does. Returns the commit, or
   * null when it cannot be so (no spare at that commit, the branch exists, refs not in files, a
   * folder at `dir`): the caller makes the worktree with git.
   */
  place(dir: string, branch: string, start: string): string | null {
    const files = this.files;
    if (!files || this.closed || existsSync(dir)) return null;
    const ref = `refs/heads/${branch}`;
    const commit = files.commitOf(start);
    if (!commit || !files.free(ref)) return null;
    const spare = this.take(commit);
    if (!spare) return null;
    try {
      files.createBranch(ref, commit);
    } catch {
      this.ready.push(spare);
      return null;
    }
    try {
      writeWhole(join(spare.admin, 'HEAD'), `ref: ${ref}\n`);
      renameSync(spare.dir, dir);
      writeWhole(join(spare.admin, 'gitdir'), `${join(dir, '.git')}\n`);
    } catch (err) {
      // The branch stays (the caller's git makes the worktree on it); what is left of the spare goes.
      this.o.onError(err);
      void this.remove(spare.dir);
      return null;
    }
    return commit;
  }

  /**
   * A ready spare, taken out of the pool: at `commit` (null: any, to be switched by git). Running
   * dry raises the pool's goal; the pool is refilled.
   */
  take(commit: string | null): Spare | null {
    const i = commit === null ? this.ready.length - 1 : this.ready.findIndex((s) => s.commit === commit);
    const [spare] = i < 0 ? [] : this.ready.splice(i, 1);
    this.stuck = false;
    if (!this.ready.length) {
      this.ranDry = true;
      this.goal = Math.min(this.goal * 2, Math.max(MIN_SPARES, this.o.max()));
    }
    this.refill();
    return spare ?? null;
  }

  /** `n` runs could start now (the queue): the pool aims at that many spares (up to the slots). */
  expect(n: number): void {
    if (n <= this.goal) return;
    this.goal = Math.min(n, Math.max(MIN_SPARES, this.o.max()));
    this.stuck = false;
    this.refill();
  }

  /** The hourly cleanup: a pool that did not run dry since the last one goes back to MIN_SPARES. */
  async shrink(): Promise<void> {
    if (!this.ranDry) this.goal = MIN_SPARES;
    this.ranDry = false;
    while (this.ready.length > this.target() && !this.closed) {
      const spare = this.ready.pop()!;
      const removed = this.removeInTurn(spare.dir);
      this.track(removed);
      await removed;
    }
  }

  /**
   * Makes spares until the pool holds its target, MAKERS at a time (each `git worktree add` of a
   * folder of its own: git makes each entry with an exclusive mkdir, so they do not collide), and
   * replaces those at another commit than new branches start from now (HEAD moved).
   */
  refill(): void {
    if (this.closed) return;
    const want = this.files?.commitOf(this.o.start());
    if (want) {
      for (const stale of this.ready.filter((s) => s.commit !== want)) {
        this.ready.splice(this.ready.indexOf(stale), 1);
        this.track(this.removeInTurn(stale.dir));
      }
    }
    while (!this.stuck && this.making < MAKERS && this.ready.length + this.making < this.target()) {
      this.making++;
      this.track(this.makeOne(want || this.o.start()).finally(() => this.refill()));
    }
  }

  /** Resolves when a spare being made now is ready (or could not be made); null when none is being made. */
  pending(): Promise<void> | null {
    return this.making ? new Promise((resolve) => this.waiting.push(resolve)) : null;
  }

  /** No spare is made any more; resolves once those being made are (a git process must not outlive the daemon's files). */
  async close(): Promise<void> {
    this.closed = true;
    while (this.work.size) await Promise.all([...this.work]);
  }

  private track(p: Promise<void>): void {
    const tracked = p.catch((err) => this.o.onError(err)).finally(() => this.work.delete(tracked));
    this.work.add(tracked);
  }

  private async makeOne(start: string): Promise<void> {
    try {
      await this.o.quiet();
      const spare = await this.make(start);
      // Not made (a repository without commits, a disk full): not tried again until the next take.
      if (spare) this.ready.push(spare);
      else this.stuck = true;
    } finally {
      this.making--;
      for (const wake of this.waiting.splice(0)) wake();
    }
  }

  private async make(start: string): Promise<Spare | null> {
    if (this.closed) return null;
    await ignoreWorktrees(this.o.root);
    const name = `${SPARE_PREFIX}${uuidv4()}`;
    if (this.direct && this.files && HASH.test(start)) {
      const made = await this.makeDirect(this.files.commonDir, name, start);
      if (made !== undefined) return made;
    }
    return serial(this.key, () => this.makeWithGit(name, start));
  }

  /**
   * A spare made as `git worktree add --detach` makes it, with one git process instead of three:
   * the folder and its `.git` file, the repository's entry for it (gitdir, commondir, HEAD; the
   * layout gitrepository-layout(5) documents) written apart and renamed into .git/worktrees/
   * whole (a git process listing the worktrees meanwhile never reads half an entry, which
   * concurrent `git worktree add`s do, so those are serialised), then `git reset --hard` in it to
   * check the files out. Undefined when the entry cannot be renamed there (another file system):
   * git makes it.
   */
  private async makeDirect(commonDir: string, name: string, commit: string): Promise<Spare | null | undefined> {
    const dir = join(this.base, name);
    let admin: string | null = null;
    try {
      admin = writeEntry(dir, commonDir, name, commit);
      if (!admin) {
        this.direct = false;
        await rm(dir, { recursive: true, force: true });
        return undefined;
      }
      await git(dir, ['reset', '--hard', '--no-recurse-submodules', '--quiet']);
      return { dir, admin, commit };
    } catch (err) {
      this.o.onError(err);
      await rm(dir, { recursive: true, force: true });
      if (admin) await rm(admin, { recursive: true, force: true });
      return null;
    }
  }

  private async makeWithGit(name: string, start: string): Promise<Spare | null> {
    const dir = join(this.base, name);
    try {
      await git(this.o.root, ['worktree', 'add', '--quiet', '--detach', dir, start]);
    } catch (err) {
      this.o.onError(err);
      await rm(dir, { recursive: true, force: true });
      return null;
    }
    const st = await worktreeState(dir);
    if (st.kind === 'valid' && HASH.test(st.head)) return { dir, admin: st.admin, commit: st.head };
    await this.removeNow(dir);
    return null;
  }

  private async removeInTurn(dir: string): Promise<void> {
    const end = await this.o.turn();
    await this.remove(dir).finally(end);
  }

  /** A spare's folder and the repository's entry for it, removed. */
  private remove(dir: string): Promise<void> {
    return serial(this.key, () => this.removeNow(dir));
  }

  private async removeNow(dir: string): Promise<void> {
    const r = await git(this.o.root, ['worktree', 'remove', '--force', '--force', dir], { ok: [128] });
    if (r.code === 0) return;
    // Not a worktree git knows (or a folder half made): the folder goes, then its entry, if any.
    await rm(dir, { recursive: true, force: true });
    await git(this.o.root, ['worktree', 'remove', '--force', '--force', dir], { ok: [128] });
  }
}

/**
 * The folder of a spare at `dir` and the repository's entry for it, as `git worktree add --detach`
 * writes them: the folder's `.git` file, and the entry (gitdir, commondir, HEAD) written in the
 * folder, then renamed into <commonDir>/worktrees/<name> whole. Returns the entry, or null when
 * it cannot be renamed there (another file system). Synchronous: a few small files, each a
 * microsecond, where each asynchronous call is a turn of the event loop (refs.ts).
 */
function writeEntry(dir: string, commonDir: string, name: string, commit: string): string | null {
  const staging = join(dir, '.svc-entry');
  mkdirSync(staging, { recursive: true });
  const entry = join(realpathSync(commonDir), 'worktrees', name);
  writeFileSync(join(dir, '.git'), `gitdir: ${entry}\n`);
  writeFileSync(join(staging, 'gitdir'), `${join(realpathSync(dir), '.git')}\n`);
  writeFileSync(join(staging, 'commondir'), '../..\n');
  writeFileSync(join(staging, 'HEAD'), `${commit}\n`);
  mkdirSync(dirname(entry), { recursive: true });
  try {
    renameSync(staging, entry);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EXDEV') return null;
    throw err;
  }
  return entry;
}
