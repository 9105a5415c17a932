import type { Command } from 'commander';
import { resolve } from 'node:path';
import { SvcClient } from '../client/client.js';
import { findProjectRoot } from '../config/find.js';
import { daemonCa, readLocalKey, runningDaemon } from '../state-dir.js';
import { io } from './io.js';

export interface GlobalOptions {
  project?: string;
  url?: string;
  apiKey?: string;
  json?: boolean;
  yes?: boolean;
}

export interface CliContext {
  json: boolean;
  /** --yes: destructive commands proceed without asking. */
  yes: boolean;
  root: string | null;
  client: SvcClient;
}

/** Exit codes of the CLI (DESIGN section 8); a confirmation answered "no" exits 1, as a refusal does. */
export const EXIT = { ok: 0, api: 1, cancelled: 1, usage: 2, unreachable: 3 } as const;

/** An error the CLI explains itself: a message, and what to do about it. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** A problem with what the user typed, found before any request: exit 2. */
export class UsageError extends CliError {}

/** The person answered "no" to a confirmation: nothing went wrong, so it is said plainly, exit 1. */
export class Cancelled extends CliError {}

/** Nothing to talk to: not in a project, or its daemon is not running. Exit 3 with a hint. */
export class NoDaemonError extends CliError {}

export function projectRoot(opts: GlobalOptions): string | null {
  const { env, cwd } = io();
  if (opts.project) return resolve(cwd, opts.project);
  if (env.SVC_PROJECT) return resolve(cwd, env.SVC_PROJECT);
  return findProjectRoot(cwd);
}

/**
 * Finds the daemon and the key: --url or SVC_URL, else the project's .svc/daemon.json (written by
 * the running daemon, removed when it stops); --api-key, SERVICE_API_KEY, then .svc/local.key.
 * There is deliberately no fallback to a default port: another project's daemon may be there, and
 * it would answer this project's commands (or refuse its key).
 */
export function cliContext(cmd: Command): CliContext {
  const { env } = io();
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  const root = projectRoot(opts);
  const explicitUrl = opts.url || env.SVC_URL || undefined;
  let url = explicitUrl;
  let ca: Buffer | undefined;
  if (!url) {
    if (!root) throw new NoDaemonError('no project.json here or in any parent directory', 'run `svc init` to create one, or pass --project DIR or --url URL');
    const info = runningDaemon(root);
    if (!info) throw new NoDaemonError(`no svc daemon is running for the project in ${root}`, 'start it with `svc serve` (or `svc serve --detach`)');
    url = info.url;
    ca = daemonCa(info); // its own daemon's certificate (server.tls), trusted even when self-signed
  }
  let apiKey = opts.apiKey || env.SERVICE_API_KEY || undefined;
  // The project's local key goes only to its own daemon, or to an explicit loopback URL.
  if (!apiKey && root && (!explicitUrl || isLoopbackUrl(explicitUrl))) apiKey = readLocalKey(root);
  return { json: Boolean(opts.json), yes: Boolean(opts.yes), root, client: new SvcClient({ url, apiKey, ca }) };
}

export function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || host.startsWith('127.');
  } catch {
    return false;
  }
}
