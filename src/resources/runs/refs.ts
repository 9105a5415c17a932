import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

// A repository's refs read and a new branch made from its files, as git keeps them (the "files"
// ref backend: loose refs, packed-refs; a lock file created exclusively, then renamed over the
// ref, as git does): what a new run's worktree needs, with no git process (spares.ts, dispatch
// latency). Anything of another shape (reftable, a symbolic ref of another kind, a ref name that
// is not a branch) answers undefined and the caller asks git instead.
//
// Synchronous on purpose: a handful of small files in .git/, microseconds each, read on the path
// from a run's claim to its spawn. Each asynchronous call is a round trip through libuv's thread
// pool and a turn of the event loop, where other work (a finishing run, a request) comes first:
// measured on a loaded 2-core machine, 2 to 5 ms each at the median (docs/performance.md, Runs).

/** A commit's (or any object's) full name: SHA-1 or SHA-256. */
export const HASH = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/** packed-refs indexed: each name's hash, and the names sorted (the refs inside a folder are a range). */
interface Packed {
  key: string;
  hashes: Map<string, string>;
  sorted: string[];
}

export class RefFiles {
  private packed: Packed | null = null;

  /**
   * `commonDir`: the repository's own folder (refs, packed-refs); `headDir`: where the checkout's
   * HEAD is (the same, unless the project is itself a linked worktree).
   */
  constructor(
    readonly commonDir: string,
    readonly headDir: string,
  ) {}

  /** Files when the repository keeps its refs in files (not reftable), else null. */
  static of(commonDir: string, headDir: string): RefFiles | null {
    if (existsSync(join(commonDir, 'reftable'))) return null;
    return new RefFiles(commonDir, headDir);
  }

  /**
   * The commit of HEAD, of a branch (`refs/heads/…`) or of a branch's short name (`main`, as
   * runner.baseRef is often written): null when the branch does not exist, undefined when the
   * files cannot tell (a tag, a name git would read otherwise).
   */
  commitOf(ref: string): string | null | undefined {
    if (ref === 'HEAD') {
      const head = read(join(this.headDir, 'HEAD'))?.trim() ?? '';
      if (HASH.test(head)) return head;
      return head.startsWith('ref: refs/heads/') ? this.commitOf(head.slice(5)) : undefined;
    }
    if (!ref.startsWith('refs/')) {
      const branch = this.branchOf(ref);
      // No such branch: git would look further (refs/remotes/…), so it is asked.
      return branch ? (this.commitOf(branch) ?? undefined) : undefined;
    }
    if (!isBranchRef(ref)) return undefined;
    const loose = read(join(this.commonDir, ref));
    if (loose !== null) return HASH.test(loose.trim()) ? loose.trim() : undefined;
    const hash = this.packedRefs().hashes.get(ref);
    if (hash === undefined) return null;
    return HASH.test(hash) ? hash : undefined;
  }

  /**
   * The branch a short name means to git (`main` → `refs/heads/main`), or null when git would
   * read it otherwise: git tries `<name>` in the repository's folder, `refs/<name>`,
   * `refs/tags/<name>` before `refs/heads/<name>` (gitrevisions(7)), and a name of hex digits
   * may be an abbreviated commit.
   */
  private branchOf(name: string): string | null {
    const branch = `refs/heads/${name}`;
    if (!isBranchRef(branch) || /^[0-9a-f]{4,}$/.test(name)) return null;
    const packed = this.packedRefs().hashes;
    for (const before of [`refs/${name}`, `refs/tags/${name}`]) if (packed.has(before) || existsSync(join(this.commonDir, before))) return null;
    if (existsSync(join(this.headDir, name)) || existsSync(join(this.commonDir, name))) return null;
    return branch;
  }

  /**
   * Whether branch `ref` can be made: neither it nor a ref it would sit in or over exists
   * (`refs/heads/svc` as a branch leaves no room for `refs/heads/svc/a/b`, loose or packed).
   */
  free(ref: string): boolean {
    if (!isBranchRef(ref)) return false;
    const parts = ref.split('/');
    for (let i = 3; i <= parts.length; i++) {
      const at = parts.slice(0, i).join('/');
      let st;
      try {
        st = lstatSync(join(this.commonDir, at));
      } catch {
        break; // nothing there, nor deeper
      }
      if (i < parts.length ? !st.isDirectory() : true) return false;
    }
    const { hashes, sorted } = this.packedRefs();
    // The ref itself or one it would sit in, then one inside it (the first name after `<ref>/`).
    for (let i = 3; i <= parts.length; i++) if (hashes.has(parts.slice(0, i).join('/'))) return false;
    const inside = `${ref}/`;
    return !sorted[lowerBound(sorted, inside)]?.startsWith(inside);
  }

  /**
   * Makes branch `ref` at `commit`, as git does: `<ref>.lock` created exclusively (another writer,
   * git or svc, fails it), written, renamed over the ref. Throws when the branch is there already
   * or its lock is held; a lock it created is removed whatever fails.
   */
  createBranch(ref: string, commit: string): void {
    if (!isBranchRef(ref) || !HASH.test(commit)) throw new Error(`not a branch and a commit: ${ref} ${commit}`);
    const file = join(this.commonDir, ref);
    mkdirSync(dirname(file), { recursive: true });
    const lock = `${file}.lock`;
    const fd = openSync(lock, 'wx');
    let open = true;
    try {
      writeSync(fd, `${commit}\n`);
      closeSync(fd);
      open = false;
      // Taken meanwhile (the lock was free, the ref made by another just before): left as it is.
      if (!this.free(ref)) throw new Error(`branch ${ref} exists`);
      renameSync(lock, file);
    } catch (err) {
      if (open) closeSync(fd);
      rmSync(lock, { force: true });
      throw err;
    }
  }

  /**
   * packed-refs indexed, read again only when the file changed: once per change its whole
   * (O(n), a repository of 200,000 refs some 50 ms), then each look-up a Map or a binary search.
   */
  private packedRefs(): Packed {
    const file = join(this.commonDir, 'packed-refs');
    let key: string;
    try {
      const st = statSync(file);
      key = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return NO_PACKED;
    }
    if (this.packed?.key === key) return this.packed;
    const hashes = new Map<string, string>();
    for (const line of (read(file) ?? '').split('\n')) {
      const space = line.indexOf(' ');
      // Comments (#), peeled tags (^<hash>) and blank lines have no hash before a space.
      if (space > 0 && HASH.test(line.slice(0, space))) hashes.set(line.slice(space + 1), line.slice(0, space));
    }
    this.packed = { key, hashes, sorted: [...hashes.keys()].sort() };
    return this.packed;
  }
}

const NO_PACKED: Packed = { key: '', hashes: new Map(), sorted: [] };

/** The first index of `sorted` whose name is not before `name`. */
function lowerBound(sorted: string[], name: string): number {
  let [lo, hi] = [0, sorted.length];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const isBranchRef = (ref: string): boolean => /^refs\/heads\/[\w./-]+$/.test(ref) && !ref.includes('..') && !ref.endsWith('.lock') && !ref.includes('/.') && !ref.endsWith('/');

function read(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}
