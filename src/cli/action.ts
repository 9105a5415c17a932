import { InvalidArgumentError, type Command } from 'commander';
import { ApiError, UnreachableError } from '../client/client.js';
import { cliDetails, cliText } from './api-words.js';
import { Cancelled, CliError, cliContext, EXIT, NoDaemonError, UsageError, type CliContext, type GlobalOptions } from './context.js';
import { io } from './io.js';
import { err, style } from './output.js';
import { InvalidOptions } from './validate.js';

/** What a failure says: a code, a message, perhaps what to do, and the exit code it means. */
function describe(e: unknown): { code: string; message: string; hint?: string; status?: number; details: { path: string; message: string }[]; exit: number } {
  if (e instanceof ApiError) {
    const details = e.details ?? [];
    // With details, the summary would repeat them: print each invalid field on its own line instead.
    return { code: e.code, status: e.status, message: details.length ? 'the request is invalid:' : e.message, details, exit: EXIT.api };
  }
  if (e instanceof UnreachableError) {
    return { code: 'unreachable', message: e.message, hint: 'start it in the project with `svc serve` (or pass --url)', details: [], exit: EXIT.unreachable };
  }
  if (e instanceof NoDaemonError) return { code: 'unreachable', message: e.message, hint: e.hint, details: [], exit: EXIT.unreachable };
  if (e instanceof InvalidOptions) return { code: 'invalid_request', message: e.message, details: e.details, exit: EXIT.usage };
  if (e instanceof UsageError) return { code: 'usage', message: e.message, hint: e.hint, details: [], exit: EXIT.usage };
  if (e instanceof Cancelled) return { code: 'cancelled', message: e.message, details: [], exit: EXIT.cancelled };
  if (e instanceof CliError) return { code: 'error', message: e.message, hint: e.hint, details: [], exit: EXIT.api };
  return { code: 'error', message: (e as Error)?.message ?? String(e), details: [], exit: EXIT.api };
}

/**
 * Reports a failure the way every command does and sets the exit code. With --json it is one
 * object on stderr: {code, error, hint?} (plus status and details for API errors). `cmd`, the
 * command that failed, names its flags and arguments in place of the request fields they fill,
 * and commands in place of endpoints (api-words.ts).
 */
export function fail(e: unknown, json = false, cmd?: Command): void {
  const d = describe(e);
  // The API's words (its own, or its schemas' for options checked here) → the command line's.
  if (e instanceof ApiError || e instanceof InvalidOptions) {
    d.message = cliText(d.message, cmd);
    d.details = cliDetails(d.details, cmd);
  }
  io().exitCode = d.exit;
  if (json) {
    const body = { code: d.code, error: d.message.replace(/:$/, ''), hint: d.hint, status: d.status, details: d.details.length ? d.details : undefined };
    err(JSON.stringify(body) + '\n');
    return;
  }
  // A "no" at a confirmation is the person's choice, not a failure: no red "error".
  if (e instanceof Cancelled) return void err(`${d.message}\n`);
  err(`${style.red('error')} ${d.status ? `${d.code} (${d.status}): ` : ''}${d.message}\n`);
  for (const x of d.details) err(`  ${x.path}: ${x.message}\n`);
  if (d.hint) err(`${style.dim('hint:')} ${d.hint}\n`);
}

/**
 * Wraps a command body: it gets the CLI context (client, --json) and its positional arguments
 * and options, and any failure becomes the right message and exit code.
 */
export function action<A extends unknown[]>(fn: (ctx: CliContext, ...args: A) => Promise<void> | void) {
  return async function (this: Command, ...args: unknown[]): Promise<void> {
    try {
      await fn(cliContext(this), ...(args.slice(0, -1) as A));
    } catch (e) {
      fail(e, Boolean(this.optsWithGlobals<GlobalOptions>().json), this);
    }
  };
}

/** Like action(), for commands that need no daemon (init, doctor): no client is looked for. */
export function localAction<A extends unknown[]>(fn: (opts: GlobalOptions, ...args: A) => Promise<void> | void) {
  return async function (this: Command, ...args: unknown[]): Promise<void> {
    const globals = this.optsWithGlobals<GlobalOptions>();
    try {
      await fn(globals, ...(args.slice(0, -1) as A));
    } catch (e) {
      fail(e, Boolean(globals.json), this);
    }
  };
}

export function parseIntOption(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n)) throw new InvalidArgumentError(`${name} must be a whole number.`);
    return n;
  };
}

export const collect = (v: string, prev: string[] = []): string[] => [...prev, v];
