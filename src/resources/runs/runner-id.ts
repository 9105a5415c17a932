import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * This project folder's runner id, kept in .svc/runner-id: the same across restarts, so a daemon
 * starting after a crash knows which unfinished runs were its own (and may still have processes).
 */
export function runnerId(stateDir: string): string {
  const file = join(stateDir, 'runner-id');
  try {
    const id = readFileSync(file, 'utf8').trim();
    if (/^[0-9a-f-]{36}$/.test(id)) return id;
  } catch {
    // first start
  }
  const id = randomUUID();
  writeFileSync(file, `${id}\n`, { mode: 0o600 });
  return id;
}
