import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, isAbsolute, join, resolve, sep } from 'node:path';
import type { Driver } from '../types.js';
import { cutText } from './bounds.js';

// Finding an agent CLI (`svc agents detect`, and the 422 of a runtime whose binary is missing):
// its executable, where it was looked for when it is not there, and its version. Everything here
// is asynchronous: a slow disk or a CLI that hangs on --version never holds the event loop.

/** How long a CLI may take to print its version before it is killed. */
export const VERSION_TIMEOUT_MS = 5_000;

export type BinaryLookup =
  | { path: string; looked: string[] }
  /** Not found: `looked` holds every place tried (with why a file there did not do), `error` says so in one line. */
  | { path: null; looked: string[]; error: string };

export interface LookupOptions {
  /** The PATH to search (the daemon's own by default). */
  PATH?: string;
  /** What a relative runtime.command is relative to (the project root). */
  cwd: string;
  /** Windows' executable extensions (PATHEXT); ignored elsewhere. */
  PATHEXT?: string;
  platform?: NodeJS.Platform;
}

/** Why `file` cannot be run, or null when it can (a regular file with its executable bit for us). */
async function notRunnable(file: string): Promise<string | null> {
  try {
    if (!(await stat(file)).isFile()) return 'not a file';
  } catch {
    return 'absent';
  }
  try {
    await access(file, constants.X_OK);
    return null;
  } catch {
    return 'not executable';
  }
}

/**
 * The executable `command` names: a path (it holds a separator), resolved against `cwd`, or a name
 * searched on PATH in order. The first runnable file wins.
 */
export async function findBinary(command: string, opts: LookupOptions): Promise<BinaryLookup> {
  const platform = opts.platform ?? process.platform;
  const looked: string[] = [];
  const tryFile = async (file: string): Promise<boolean> => {
    const why = await notRunnable(file);
    if (why === null) return true;
    looked.push(why === 'absent' ? file : `${file} (${why})`);
    return false;
  };
  if (command.includes('/') || command.includes(sep) || isAbsolute(command)) {
    const file = resolve(opts.cwd, command);
    if (await tryFile(file)) return { path: file, looked: [file] };
    return { path: null, looked, error: `${command} cannot be run: looked at ${looked[0]}` };
  }
  const exts = platform === 'win32' ? ['', ...(opts.PATHEXT ?? '.EXE;.CMD;.BAT;.COM').split(';').filter(Boolean)] : [''];
  const dirs = (opts.PATH ?? process.env.PATH ?? '').split(platform === 'win32' ? ';' : delimiter).filter(Boolean);
  for (const dir of dirs) {
    for (const ext of exts) {
      const file = join(dir, command + ext);
      if (await tryFile(file)) return { path: file, looked: [...looked, file] };
    }
  }
  const where = dirs.length ? `looked in ${dirs.join(', ')} (PATH)` : 'PATH is empty';
  return { path: null, looked, error: cutText(`${command} was not found: ${where}`) };
}

/**
 * The first line `file versionArgs…` prints (stdout, else stderr), or null with why: it failed,
 * printed nothing or took longer than `timeoutMs` (then it is killed).
 */
export function binaryVersion(file: string, versionArgs: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<{ version: string | null; error: string | null }> {
  return new Promise((done) => {
    execFile(
      file,
      versionArgs,
      { env: opts.env ?? process.env, timeout: opts.timeoutMs ?? VERSION_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 64 * 1024, windowsHide: true },
      (err, stdout, stderr) => {
        const first = (s: string) =>
          s
            .split('\n')
            .map((l) => l.trim())
            .find(Boolean) ?? null;
        const line = first(String(stdout)) ?? first(String(stderr));
        if (err) {
          const killed = (err as { killed?: boolean }).killed;
          return done({ version: null, error: killed ? `no answer to ${versionArgs.join(' ')} within ${opts.timeoutMs ?? VERSION_TIMEOUT_MS} ms` : cutText(line ?? err.message, 500) });
        }
        done(line ? { version: cutText(line, 200), error: null } : { version: null, error: `nothing printed by ${versionArgs.join(' ')}` });
      },
    );
  });
}

export interface RuntimeDetection {
  kind: Driver['kind'];
  /** The executable found, or null. */
  path: string | null;
  version: string | null;
  /** Every place looked at, in order. */
  looked: string[];
  /** Why there is no path or no version (one line), else null. */
  error: string | null;
}

/**
 * A runtime's binary and version: `command` (the agent's runtime.command) or the driver's default
 * name. A runtime kind without a default (`command`) needs one.
 */
export async function detectRuntime(driver: Driver, command: string | null | undefined, opts: LookupOptions & { env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<RuntimeDetection> {
  const name = command || driver.defaultCommand;
  if (!name) return { kind: driver.kind, path: null, version: null, looked: [], error: `a runtime of kind ${driver.kind} names its program in runtime.command` };
  const found = await findBinary(name, { ...opts, PATH: opts.PATH ?? opts.env?.PATH });
  if (found.path === null) return { kind: driver.kind, path: null, version: null, looked: found.looked, error: found.error };
  if (driver.versionArgs.length === 0) return { kind: driver.kind, path: found.path, version: null, looked: found.looked, error: null };
  const v = await binaryVersion(found.path, driver.versionArgs, { env: opts.env, timeoutMs: opts.timeoutMs });
  return { kind: driver.kind, path: found.path, version: v.version, looked: found.looked, error: v.error };
}
