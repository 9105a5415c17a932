import { chmodSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';

/** Creates a private directory (0700), tightening it if it already existed. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

/** Writes a 0600 file atomically: readers see the old content or the new, never half of it. */
export function writePrivateFile(file: string, content: string): void {
  writeWhole(file, content, 0o600);
}

/**
 * Writes a file atomically (a file beside it, renamed over it): readers (git too) see the old
 * content or the new, never half. `mode` is set exactly when given, else the umask's default. A
 * failure leaves no file beside it.
 */
export function writeWhole(file: string, content: string, mode?: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, content, mode === undefined ? undefined : { mode });
    if (mode !== undefined) chmodSync(tmp, mode);
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
