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

/** packed-refs indexed: the names sorted (a name, or the refs inside a folder, found by binary search), and their hashes. */
interface Packed {
  key: string;
  names: string[];
  hashes: string[];
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
    return packedHash(this.packedRefs(), ref) ?? null;
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
    const packed = this.packedRefs();
    for (const before of [`refs/${name}`, `refs/tags/${name}`]) if (packedHash(packed, before) || existsSync(join(this.commonDir, before))) return null;
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
    const packed = this.packedRefs();
    // The ref itself or one it would sit in, then one inside it (the first name after `<ref>/`).
    for (let i = 3; i <= parts.length; i++) if (packedHash(packed, parts.slice(0, i).join('/'))) return false;
    const inside = `${ref}/`;
    return !packed.names[lowerBound(packed.names, inside)]?.startsWith(inside);
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
   * (O(n): git writes it sorted; 200,000 refs some 60 ms), then each look-up a
   * binary search.
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
    let names: string[] = [];
    let hashes: string[] = [];
    let inOrder = true;
    for (const line of (read(file) ?? '').split('\n')) {
      const space = line.indexOf(' ');
      // Comments (#), peeled tags (^<hash>) and blank lines have no hash before a space.
      if (space !== 40 && space !== 64) continue;
      const name = line.slice(space + 1);
      if (inOrder && names.length && names[names.length - 1]! >= name) inOrder = false;
      names.push(name);
      hashes.push(line.slice(0, space));
    }
    // git writes it sorted: sorted here only when it is not.
    if (!inOrder) {
      const order = names.map((_, i) => i).sort((a, b) => (names[a]! < names[b]! ? -1 : names[a]! > names[b]! ? 1 : 0));
      [names, hashes] = [order.map((i) => names[i]!), order.map((i) => hashes[i]!)];
    }
    this.packed = { key, names, hashes };
    return this.packed;
  }
}

const NO_PACKED: Packed = { key: '', names: [], hashes: [] };

/** A packed ref's hash: undefined when it is not there or its hash is not one. */
function packedHash(packed: Packed, name: string): string | undefined {
  const i = lowerBound(packed.names, name);
  const hash = packed.names[i] === name ? packed.hashes[i]! : undefined;
  return hash !== undefined && HASH.test(hash) ? hash : undefined;
}

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
