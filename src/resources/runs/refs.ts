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

const HASH = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

export class RefFiles {
  private packed: { key: string; lines: string[] } | null = null;

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
   * The commit of HEAD or of a branch (`refs/heads/…`): null when the branch does not exist,
   * undefined when the files cannot tell.
   */
  commitOf(ref: string): string | null | undefined {
    if (ref === 'HEAD') {
      const head = read(join(this.headDir, 'HEAD'))?.trim() ?? '';
      if (HASH.test(head)) return head;
      return head.startsWith('ref: refs/heads/') ? this.commitOf(head.slice(5)) : undefined;
    }
    if (!isBranchRef(ref)) return undefined;
    const loose = read(join(this.commonDir, ref));
    if (loose !== null) return HASH.test(loose.trim()) ? loose.trim() : undefined;
    const line = this.packedLines().find((l) => l.endsWith(` ${ref}`));
    if (!line) return null;
    const hash = line.slice(0, line.indexOf(' '));
    return HASH.test(hash) ? hash : undefined;
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
    for (const line of this.packedLines()) {
      const name = line.slice(line.indexOf(' ') + 1);
      if (name === ref || name.startsWith(`${ref}/`) || ref.startsWith(`${name}/`)) return false;
    }
    return true;
  }

  /**
   * Makes branch `ref` at `commit`, as git does: `<ref>.lock` created exclusively (another writer,
   * git or svc, fails it), written, renamed over the ref. Throws when the branch is there already
   * or its lock is held.
   */
  createBranch(ref: string, commit: string): void {
    if (!isBranchRef(ref) || !HASH.test(commit)) throw new Error(`not a branch and a commit: ${ref} ${commit}`);
    const file = join(this.commonDir, ref);
    mkdirSync(dirname(file), { recursive: true });
    const lock = `${file}.lock`;
    const fd = openSync(lock, 'wx');
    try {
      writeSync(fd, `${commit}\n`);
    } finally {
      closeSync(fd);
    }
    try {
      // Taken meanwhile (the lock was free, the ref made by another just before): left as it is.
      if (!this.free(ref)) throw new Error(`branch ${ref} exists`);
      renameSync(lock, file);
    } catch (err) {
      rmSync(lock, { force: true });
      throw err;
    }
  }

  /** packed-refs' ref lines, read again only when the file changed. */
  private packedLines(): string[] {
    const file = join(this.commonDir, 'packed-refs');
    let key: string;
    try {
      const st = statSync(file);
      key = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return [];
    }
    if (this.packed?.key !== key) this.packed = { key, lines: (read(file) ?? '').split('\n').filter((l) => HASH.test(l.slice(0, l.indexOf(' ')))) };
    return this.packed.lines;
  }
}

/** A file written whole: a reader (git) sees the old or the new content, never half. */
export function writeWhole(file: string, content: string): void {
  const tmp = `${file}.svc-tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

const isBranchRef = (ref: string): boolean => /^refs\/heads\/[\w./-]+$/.test(ref) && !ref.includes('..') && !ref.endsWith('.lock') && !ref.includes('/.');

function read(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}
