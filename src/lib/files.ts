import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';

/** Creates a private directory (0700), tightening it if it already existed. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

/** Writes a 0600 file atomically: readers see the old content or the new, never half of it. */
export function writePrivateFile(file: string, content: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}
