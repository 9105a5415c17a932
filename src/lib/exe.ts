import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as sea from 'node:sea';

// svc as one executable (Node's single executable applications; scripts/build-exe.mjs makes it):
// what the running program needs to know of it. Outside the executable `inExe()` is false and
// nothing here is used. Inside it, the bundled JavaScript has no node_modules and no files beside
// it: the thread entries, the native addons and any data files are assets in the executable, and
// the native addons are written once to a private cache, named by their hash, to be loaded from there.

/** What scripts/build-exe.mjs records in the executable's `build.json` asset. */
export interface ExeBuild {
  version: string;
  /** The Node version the executable runs on. */
  node: string;
  platform: string;
  /** Native addon name → the SHA-256 of its bytes (the asset is `native/<name>.node`). */
  natives: Record<string, string>;
  /** The board's files (assets `board/<name>`). */
  board: string[];
}

/** Set in a child process's environment to start the executable as that entry (src/exe/main.ts), not as the CLI. */
export const EXE_ENTRY_ENV = 'SVC_EXE_ENTRY';

let build: ExeBuild | null | undefined;

export function inExe(): boolean {
  return sea.isSea();
}

/** An asset of the executable, as a view on its bytes; undefined outside it or when there is none by that name. */
export function exeAsset(name: string): Buffer | undefined {
  if (!inExe()) return undefined;
  try {
    const raw = sea.getRawAsset(name);
    return typeof raw === 'string' ? Buffer.from(raw, 'utf8') : Buffer.from(raw);
  } catch {
    return undefined;
  }
}

export function exeBuild(): ExeBuild | null {
  if (build !== undefined) return build;
  const raw = exeAsset('build.json');
  return (build = raw ? (JSON.parse(raw.toString('utf8')) as ExeBuild) : null);
}

/**
 * The per-user cache the executable writes its native addons to: SVC_CACHE_DIR, else the
 * platform's cache directory. Private to the user (0700), like ~/.cache itself is meant to be.
 */
export function exeCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SVC_CACHE_DIR) return env.SVC_CACHE_DIR;
  const home = homedir() || tmpdir();
  if (process.platform === 'darwin') return join(home, 'Library', 'Caches', 'svc');
  if (process.platform === 'win32') return join(env.LOCALAPPDATA || join(home, 'AppData', 'Local'), 'svc', 'cache');
  return join(env.XDG_CACHE_HOME || join(home, '.cache'), 'svc');
}

/**
 * The cache holds code this process will run: a folder another user could write to would let them
 * swap a library between its check and its load, so it must be ours and closed to others.
 */
function privateDir(dir: string): void {
  if (process.platform === 'win32') return;
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== process.getuid!() || (st.mode & 0o022) !== 0) {
    throw new Error(`the cache ${dir} is not a private folder of this user (owner ${st.uid}, mode ${(st.mode & 0o777).toString(8)}): fix it (chmod 700) or set SVC_CACHE_DIR to one`);
  }
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const loaded = new Map<string, unknown>();

/**
 * A native addon carried in the executable, loaded with process.dlopen from
 * <cache>/native/<sha256>/<name>.node. The file is written through a temporary name of its own
 * and renamed, so a crash or a second process starting at the same moment never leaves half a
 * library where one is loaded; a file there whose bytes are not the expected ones (a truncated
 * disk, a hand edit) is written again before it is loaded. The cache must be a folder of this user
 * that no one else can write to.
 */
export function loadNative(name: string): unknown {
  const done = loaded.get(name);
  if (done) return done;
  const digest = exeBuild()?.natives[name];
  const bytes = exeAsset(`native/${name}.node`);
  if (!digest || !bytes) throw new Error(`the native addon ${name} is not in this executable (rebuild it with npm run build:exe)`);
  const cache = exeCacheDir();
  const dir = join(cache, 'native', digest);
  const file = join(dir, `${name}.node`);
  let current: Buffer | undefined;
  try {
    current = readFileSync(file);
  } catch {
    // not written yet
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  privateDir(cache);
  if (!current || sha256(current) !== digest) {
    // A name of its own (two processes, or two threads of one, may write at once) created afresh
    // (never a file someone left there), checked, then renamed over the final name in one step.
    const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      writeFileSync(tmp, bytes, { mode: 0o700, flag: 'wx' });
      if (sha256(readFileSync(tmp)) !== digest) throw new Error(`writing ${tmp} did not keep its bytes (is the disk full?)`);
      renameSync(tmp, file);
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  const module = { exports: {} as unknown };
  process.dlopen(module, file);
  loaded.set(name, module.exports);
  return module.exports;
}
