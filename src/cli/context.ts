import type { Command } from 'commander';
import { resolve } from 'node:path';
import { SvcClient } from '../client/client.js';
import { findProjectRoot } from '../config/load.js';
import { readLocalKey, runningDaemon } from '../state-dir.js';

export interface GlobalOptions {
  project?: string;
  url?: string;
  apiKey?: string;
  json?: boolean;
}

export interface CliContext {
  json: boolean;
  root: string | null;
  client: SvcClient;
}

/** Exit codes of the CLI (DESIGN section 8). */
export const EXIT = { ok: 0, api: 1, usage: 2, unreachable: 3 } as const;

/** A problem with what the user typed, found before any request: exit 2. */
export class UsageError extends Error {}

export function projectRoot(opts: GlobalOptions): string | null {
  if (opts.project) return resolve(opts.project);
  if (process.env.SVC_PROJECT) return resolve(process.env.SVC_PROJECT);
  return findProjectRoot(process.cwd());
}

/** Nothing to talk to: not in a project, or its daemon is not running. Exit 3 with a hint. */
export class NoDaemonError extends Error {}

/**
 * Finds the daemon and the key: --url or SVC_URL, else the project's .svc/daemon.json (written by
 * the running daemon, removed when it stops); --api-key, SERVICE_API_KEY, then .svc/local.key.
 * There is deliberately no fallback to a default port: another project's daemon may be there, and
 * it would answer this project's commands (or refuse its key).
 */
export function cliContext(cmd: Command): CliContext {
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  const root = projectRoot(opts);
  const explicitUrl = opts.url || process.env.SVC_URL || undefined;
  let url = explicitUrl;
  if (!url) {
    if (!root) throw new NoDaemonError('no project.json here or in any parent directory.\nhint: run `svc init` to create one, or pass --project DIR or --url URL.');
    const info = runningDaemon(root);
    if (!info) throw new NoDaemonError(`no svc daemon is running for the project in ${root}.\nhint: start it with \`svc serve\`.`);
    url = info.url;
  }
  let apiKey = opts.apiKey || process.env.SERVICE_API_KEY || undefined;
  // The project's local key goes only to its own daemon, or to an explicit loopback URL.
  if (!apiKey && root && (!explicitUrl || isLoopbackUrl(explicitUrl))) apiKey = readLocalKey(root);
  return { json: Boolean(opts.json), root, client: new SvcClient({ url, apiKey }) };
}

function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || host.startsWith('127.');
  } catch {
    return false;
  }
}
