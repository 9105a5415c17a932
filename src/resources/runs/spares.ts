import { existsSync, mkdirSync, readdir as readdirCb, readFileSync, realpathSync, renameSync, rm as rmCb, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { writeWhole } from '../../lib/files.js';
import { uuidv4 } from '../../lib/ids.js';
import { pidAlive } from '../../lib/proc.js';
import { STATE_DIR } from '../../state-dir.js';
import { exists, git, ignoreWorktrees, removeWorktreeNow, serial, WORKTREES_DIR, worktreeState, type GitTurn } from './git.js';
import { HASH, RefFiles } from './refs.js';

// Spare worktrees: checkouts made ahead of time, so that a new task's worktree is a folder renamed
// and a branch written, with no git process between a run's claim and its spawn (dispatch
// latency, issue 31). The pool is this daemon's (one per runner), held in memory; its spares are
// folders `.svc/worktrees/.spare-<uuid>`, detached at the commit new branches start from; the
// repository's entry for each is `.git/worktrees/spare-<uuid>` (a name git itself could give: git
// refuses entries whose name starts with a dot, `git fsck` reports them and gc does not count
// their HEAD as reachable).
//
// How many: MIN_SPARES, more while runs come faster than spares are made (the pool doubled each
// time it runs dry) or while runs wait in the queue to start, never more than the runner's slots;
// back to MIN_SPARES at the hourly cleanup once a whole hour went without running dry. Each spare
// is a full checkout: on a large repository that is disk. MAKERS are made at once (makeDirect:
// one git process each), as soon as one is taken and the dispatch that took it has spawned its
// run: making them is what keeps dispatches quick (measured: spares that waited for the runner's
// turn behind the commits of finished runs let the pool run dry during a burst); a spare a
// dispatch waits for is made at once. Removing one waits for the runner's turn (dispatch-gate.ts).

// The callback forms: fs/promises keeps a FileHandle object for each operation until it is collected.
const [readdir, rm] = [promisify(readdirCb), promisify(rmCb)];

/** Spares are folders of .svc/worktrees/ with this prefix (a dot: the cleanup never lists them). */
const SPARE_PREFIX = '.spare-';
/** ...and their entries in .git/worktrees/ this one (the folder's name as git would sanitise it). */
const ENTRY_PREFIX = 'spare-';
/** What a spare's entry holds in `locked` while it is made, as `git worktree add` writes "initializing". */
const MAKING = 'initializing (svc';
/** Kept ready at the least: one taken while the next is made. */
const MIN_SPARES = 2;
/** Spares made at once (each a git process, on a machine of a few cores). */
const MAKERS = 3;

export interface Spare {
  dir: string;
  /** Its entry in the repository (.git/worktrees/<name>). */
  admin: string;
  /** The commit it is checked out at (detached). */
  commit: string;
}

/**
 * What place() did: `placed` at `commit`; `none-ready`: no spare is ready at `commit` now (one
 * being made there may be waited for, pending()); `git`: the worktree is git's to make (the refs
 * are not in files or name no branch, the branch exists, a folder is in the way, the pool closed).
 */
export type Placement = { kind: 'placed'; commit: string } | { kind: 'none-ready'; commit: string } | { kind: 'git' };
const GIT: Placement = { kind: 'git' };

/** A spare being made: at `commit` (or a name git resolves); `hurry()` makes it skip the wait for quiet. */
interface Maker {
  commit: string;
  hurry(): void;
  waited: boolean;
  done: Promise<void>;
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
  /** Spares at an old commit were removed (HEAD moved) and the pool is not full again: an empty pool is not running dry. */
  private replacing = false;
  /** Spares being made now. */
  private readonly makers = new Set<Maker>();
  /** Making one failed: none is made until the next take (or expect). */
  private stuck = false;
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
   * Finds the repository's folders, renames the entries an earlier svc named `.spare-…`, takes in
   * the spares an earlier daemon left (whole ones: checked out, not locked mid-creation; the rest
   * are removed, but for those another live daemon is making), then fills the pool. Resolves once
   * the spares on disk were looked at.
   */
  async open(): Promise<void> {
    // Absolute paths (git 2.31+); older git says them relative to the folder asked in.
    const dirs = await git(this.o.root, ['rev-parse', '--path-format=absolute', '--git-common-dir', '--git-dir']).catch(() => git(this.o.root, ['rev-parse', '--git-common-dir', '--git-dir']));
    const [common = '', own = ''] = dirs.stdout.split('\n');
    const commonDir = resolve(this.o.root, common.trim());
    this.files = RefFiles.of(commonDir, resolve(this.o.root, own.trim()));
    await serial(this.key, async () => renameDotEntries(this.o.onError, join(commonDir, WORKTREES_DIR)));
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
      // Checked out whole: a crash during its `git reset --hard` leaves no index or an index.lock (and,
      // since spares are locked while made, `locked`: stale).
      const whole = st.kind === 'valid' && (await exists(join(st.admin, 'index'))) && !(await exists(join(st.admin, 'index.lock')));
      if (st.kind === 'valid' && whole && st.branch === null && HASH.test(st.head)) this.ready.push({ dir, admin: st.admin, commit: st.head });
      else if (!makerAlive(dir)) await this.remove(dir);
    }
    this.refill();
  }

  /**
   * A new worktree at `dir` on new branch `branch` from `start` (HEAD, a branch or a branch's short
   * name), made from a ready spare with no git process: the branch written at the start's commit,
   * the folder renamed into place (the claim: of two daemons that took in the same spares one
   * renames it), the spare's HEAD set to the branch (the checkout is that commit's already) and
   * the repository's entry told its new place, as `git worktree move` does. Says why not when it
   * cannot be so (Placement).
   */
  place(dir: string, branch: string, start: string): Placement {
    const files = this.files;
    if (!files || this.closed || existsSync(dir)) return GIT;
    const ref = `refs/heads/${branch}`;
    const commit = files.commitOf(start);
    if (!commit || !files.free(ref)) return GIT;
    const spare = this.take(commit);
    if (!spare) return { kind: 'none-ready', commit };
    try {
      files.createBranch(ref, commit);
    } catch {
      this.ready.push(spare);
      return GIT;
    }
    try {
      renameSync(spare.dir, dir);
    } catch (err) {
      // Gone (another daemon took it): the branch stays, the caller's git makes the worktree on it.
      this.o.onError(err);
      this.track(this.remove(spare.dir));
      return GIT;
    }
    try {
      writeWhole(join(spare.admin, 'HEAD'), `ref: ${ref}\n`);
      writeWhole(join(spare.admin, 'gitdir'), `${join(dir, '.git')}\n`);
    } catch (err) {
      // A disk full: the folder goes back and the spare goes; the caller's git makes the worktree on the branch.
      this.o.onError(err);
      try {
        renameSync(dir, spare.dir);
        this.track(this.remove(spare.dir));
      } catch (back) {
        this.o.onError(back); // left at `dir`: ensureWorktree finds it stale and clears it
      }
      return GIT;
    }
    return { kind: 'placed', commit };
  }

  /**
   * A ready spare, taken out of the pool: at `commit` (null: any, to be switched by git). Running
   * dry raises the pool's goal; the pool is refilled.
   */
  take(commit: string | null): Spare | null {
    if (this.closed) return null;
    const i = commit === null ? this.ready.length - 1 : this.ready.findIndex((s) => s.commit === commit);
    const [spare] = i < 0 ? [] : this.ready.splice(i, 1);
    this.stuck = false;
    // Running dry: runs come faster than spares are made. Not so an empty pool whose spares were at
    // an old commit (HEAD moved) and are being replaced.
    if (!this.ready.length && !this.replacing) {
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
   * Makes spares until the pool holds its target, MAKERS at a time (each a folder and an entry of
   * its own: makeDirect renames each entry in whole, `git worktree add` runs one at a time), and
   * replaces those at another commit than new branches start from now (HEAD moved).
   */
  refill(): void {
    if (this.closed) return;
    const want = this.files?.commitOf(this.o.start());
    if (want) {
      for (const stale of this.ready.filter((s) => s.commit !== want)) {
        this.ready.splice(this.ready.indexOf(stale), 1);
        this.replacing = true;
        this.track(this.removeInTurn(stale.dir));
      }
    }
    while (!this.stuck && this.makers.size < MAKERS && this.ready.length + this.makers.size < this.target()) {
      this.track(this.makeOne(want || this.o.start()).finally(() => this.refill()));
    }
  }

  /**
   * Resolves when a spare being made at `commit` is ready (or could not be made), that spare made
   * at once (a dispatch waits for it: not after the dispatches, which would be after itself); null
   * when none is being made there.
   */
  pending(commit: string): Promise<void> | null {
    const there = [...this.makers].filter((m) => m.commit === commit);
    // One waiter per spare being made while there are enough; else the first.
    const maker = there.find((m) => !m.waited) ?? there[0];
    if (!maker) return null;
    maker.waited = true;
    maker.hurry();
    return maker.done;
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

  /** Makes one spare at `start`, once no dispatch is under way or at once when one waits for it (pending()). */
  private async makeOne(start: string): Promise<void> {
    let hurry = () => {};
    const hurried = new Promise<void>((resolve) => (hurry = resolve));
    let finish = () => {};
    const maker: Maker = { commit: start, hurry, waited: false, done: new Promise<void>((resolve) => (finish = resolve)) };
    this.makers.add(maker);
    try {
      await Promise.race([this.o.quiet(), hurried]);
      const spare = await this.make(start);
      // Not made (a repository without commits, a disk full): not tried again until the next take.
      if (spare) this.ready.push(spare);
      else this.stuck = true;
      if (this.ready.length >= this.target()) this.replacing = false;
    } finally {
      this.makers.delete(maker);
      finish();
    }
  }

  private async make(start: string): Promise<Spare | null> {
    if (this.closed) return null;
    await ignoreWorktrees(this.o.root);
    const id = uuidv4();
    if (this.direct && this.files && HASH.test(start)) {
      const made = await this.makeDirect(this.files.commonDir, id, start);
      if (made !== undefined) return made;
    }
    return serial(this.key, () => this.makeWithGit(`${SPARE_PREFIX}${id}`, start));
  }

  /**
   * A spare made as `git worktree add --detach` makes it, with one git process instead of three:
   * the folder and its `.git` file, the repository's entry for it (gitdir, commondir, HEAD, and
   * `locked` while it is made, as git does; the layout gitrepository-layout(5) documents) written
   * apart and renamed into .git/worktrees/ whole (a git process listing the worktrees meanwhile
   * never reads half an entry, which concurrent `git worktree add`s do, so those are serialised),
   * then `git reset --hard` in it to check the files out, then the lock removed: a crash before
   * leaves a spare no one takes in (open(), worktreeState). Undefined when the entry cannot be
   * renamed there (another file system): git makes it.
   */
  private async makeDirect(commonDir: string, id: string, commit: string): Promise<Spare | null | undefined> {
    const dir = join(this.base, `${SPARE_PREFIX}${id}`);
    let admin: string | null = null;
    try {
      admin = writeEntry(dir, commonDir, `${ENTRY_PREFIX}${id}`, commit);
      if (!admin) {
        this.direct = false;
        await rm(dir, { recursive: true, force: true });
        return undefined;
      }
      await git(dir, ['reset', '--hard', '--no-recurse-submodules', '--quiet']);
      await rm(join(admin, 'locked'));
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
    await removeWorktreeNow(this.o.root, dir);
    return null;
  }

  private async removeInTurn(dir: string): Promise<void> {
    const end = await this.o.turn();
    await this.remove(dir).finally(end);
  }

  /** A spare's folder and the repository's entry for it, removed. */
  private remove(dir: string): Promise<void> {
    return serial(this.key, () => removeWorktreeNow(this.o.root, dir));
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
  writeFileSync(join(staging, 'locked'), `${MAKING} ${process.pid})\n`);
  mkdirSync(dirname(entry), { recursive: true });
  try {
    renameSync(staging, entry);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EXDEV') return null;
    throw err;
  }
  return entry;
}

/**
 * Whether the spare at `dir` is being made by another daemon now (its entry locked by a process
 * that lives): left alone, neither taken in nor removed. A dead maker's spare is a crash's.
 */
function makerAlive(dir: string): boolean {
  let locked: string;
  try {
    const link = readFileSync(join(dir, '.git'), 'utf8').trim();
    if (!link.startsWith('gitdir: ')) return false;
    locked = readFileSync(join(resolve(dir, link.slice('gitdir: '.length)), 'locked'), 'utf8');
  } catch {
    return false; // no entry, or not locked
  }
  const pid = locked.startsWith(MAKING) ? Number(/(\d+)\)\s*$/.exec(locked)?.[1]) : NaN;
  return Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && pidAlive(pid);
}

/**
 * Entries of <commonDir>/worktrees named `.spare-…`, as svc named them before: git never gives an
 * entry a name that starts with a dot (`git fsck` says "invalid worktrees/.spare-…/HEAD", gc does
 * not count their HEAD as reachable). Renamed as git would name them (`spare-…`), each worktree's
 * `.git` file told: the spares and the task worktrees made from them.
 */
async function renameDotEntries(onError: (err: unknown) => void, entries: string): Promise<void> {
  let names: string[];
  try {
    names = (await readdir(entries)).filter((n) => n.startsWith(SPARE_PREFIX));
  } catch {
    return; // no worktrees
  }
  for (const name of names) {
    const from = join(entries, name);
    const to = join(entries, name.slice(1));
    try {
      if (existsSync(to)) continue;
      const link = resolve(from, readFileSync(join(from, 'gitdir'), 'utf8').trim());
      renameSync(from, to);
      let own: string | null = null;
      try {
        own = readFileSync(link, 'utf8').trim();
      } catch {
        // its folder is gone: git prunes the entry, or the cleanup removes it
      }
      if (own?.startsWith('gitdir: ') && basename(own.slice('gitdir: '.length)) === name) writeWhole(link, `gitdir: ${join(dirname(own.slice('gitdir: '.length)), name.slice(1))}\n`);
    } catch (err) {
      onError(err);
    }
  }
}
