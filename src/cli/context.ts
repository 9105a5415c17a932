import type { Command } from 'commander';
import { resolve } from 'node:path';
import { SvcClient } from '../client/client.js';
import { findProjectRoot, loadConfig } from '../config/load.js';
import { readDaemonInfo, readLocalKey } from '../state-dir.js';

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

/**
 * Finds the daemon and the key: --url, SVC_URL, then .svc/daemon.json, then project.json's
 * server address; --api-key, SERVICE_API_KEY, then .svc/local.key.
 */
export function cliContext(cmd: Command): CliContext {
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  const root = projectRoot(opts);
  let url = opts.url || process.env.SVC_URL || undefined;
  if (!url && root) url = readDaemonInfo(root)?.url;
  if (!url && root) {
    const c = loadConfig(root);
    if (c.ok) url = `http://${c.config.server.host}:${c.config.server.port}`;
  }
  url ??= 'http://127.0.0.1:7420';
  const apiKey = opts.apiKey || process.env.SERVICE_API_KEY || (root ? readLocalKey(root) : undefined);
  return { json: Boolean(opts.json), root, client: new SvcClient({ url, apiKey }) };
}
