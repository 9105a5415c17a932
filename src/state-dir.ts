import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDir, writePrivateFile } from './lib/files.js';
import { pidAlive } from './lib/proc.js';

// The layout of <root>/.svc/, shared by the daemon (which writes it) and the CLI (which reads it).

export const STATE_DIR = '.svc';

export const statePaths = (root: string) => {
  const dir = join(root, STATE_DIR);
  return {
    dir,
    db: join(dir, 'state.sqlite'),
    data: join(dir, 'data'),
    logs: join(dir, 'logs'),
    /** One file per live data worker (pid, start time, its daemon), for reaping after a crash. */
    workers: join(dir, 'workers'),
    daemon: join(dir, 'daemon.json'),
    localKey: join(dir, 'local.key'),
  };
};

export interface DaemonInfo {
  pid: number;
  host: string;
  port: number;
  url: string;
  /** With server.tls: the certificate file (absolute), which the CLI trusts for this daemon. */
  ca?: string;
  startedAt: string;
  version: string;
}

export function readDaemonInfo(root: string): DaemonInfo | null {
  try {
    return JSON.parse(readFileSync(statePaths(root).daemon, 'utf8')) as DaemonInfo;
  } catch {
    return null;
  }
}

/** The daemon.json of a daemon whose process is alive; a file left by a crash counts as none. */
export function runningDaemon(root: string): DaemonInfo | null {
  const info = readDaemonInfo(root);
  return info && pidAlive(info.pid) ? info : null;
}

/** The certificate a TLS daemon serves (its server.tls.cert), for its own project's CLI to trust. */
export function daemonCa(info: DaemonInfo | null): Buffer | undefined {
  if (!info?.ca || !info.url.startsWith('https:')) return undefined;
  try {
    return readFileSync(info.ca);
  } catch {
    return undefined;
  }
}

export function writeDaemonInfo(root: string, info: DaemonInfo): void {
  writePrivateFile(statePaths(root).daemon, JSON.stringify(info, null, 2) + '\n');
}

export function removeDaemonInfo(root: string, pid: number): void {
  // Only our own file: a second daemon that started since must keep its entry.
  const current = readDaemonInfo(root);
  if (current && current.pid === pid) rmSync(statePaths(root).daemon, { force: true });
}

export function readLocalKey(root: string): string | undefined {
  try {
    return readFileSync(statePaths(root).localKey, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The project's local key, generated (256 random bits, 0600) on first serve. */
export function ensureLocalKey(root: string): string {
  const existing = readLocalKey(root);
  if (existing) return existing;
  const paths = statePaths(root);
  ensurePrivateDir(paths.dir);
  const key = `svc_${randomBytes(32).toString('base64url')}`;
  if (!existsSync(paths.localKey)) writePrivateFile(paths.localKey, key + '\n');
  return readLocalKey(root) ?? key;
}
