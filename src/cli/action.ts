import { InvalidArgumentError, type Command } from 'commander';
import { ApiError, UnreachableError } from '../client/client.js';
import { cliContext, EXIT, NoDaemonError, UsageError, type CliContext, type GlobalOptions } from './context.js';
import { style } from './output.js';

/** Reports a failure the way every command does and sets the exit code; JSON on stderr with --json. */
export function fail(err: unknown, json = false): void {
  let code: string;
  let message: string;
  let details: { path: string; message: string }[] = [];
  let status: number | undefined;
  if (err instanceof ApiError) {
    ({ code, status } = err);
    details = err.details ?? [];
    // With details, the summary would repeat them: print each invalid field on its own line instead.
    message = details.length ? 'the request is invalid:' : err.message;
    process.exitCode = EXIT.api;
  } else if (err instanceof UnreachableError || err instanceof NoDaemonError) {
    code = 'unreachable';
    message = err instanceof UnreachableError ? `${err.message}.\nhint: start it in the project with \`svc serve\` (or pass --url).` : err.message;
    process.exitCode = EXIT.unreachable;
  } else if (err instanceof UsageError) {
    code = 'usage';
    message = err.message;
    process.exitCode = EXIT.usage;
  } else {
    code = 'error';
    message = (err as Error)?.message ?? String(err);
    process.exitCode = EXIT.api;
  }
  if (json) {
    process.stderr.write(JSON.stringify({ ok: false, code, error: message.replace(/:$/, ''), status, details: details.length ? details : undefined }) + '\n');
    return;
  }
  process.stderr.write(`${style.red('error')} ${status ? `${code} (${status}): ` : ''}${message}\n`);
  for (const d of details) process.stderr.write(`  ${d.path}: ${d.message}\n`);
}

/**
 * Wraps a command body: it gets the CLI context (client, --json) and its positional arguments
 * and options, and any failure becomes the right message and exit code.
 */
export function action<A extends unknown[]>(fn: (ctx: CliContext, ...args: A) => Promise<void> | void) {
  return async function (this: Command, ...args: unknown[]): Promise<void> {
    try {
      await fn(cliContext(this), ...(args.slice(0, -1) as A));
    } catch (err) {
      fail(err, Boolean(this.optsWithGlobals<GlobalOptions>().json));
    }
  };
}

/** Like action(), for commands that need no daemon (init): no client is looked for. */
export function localAction<A extends unknown[]>(fn: (...args: A) => Promise<void> | void) {
  return async function (this: Command, ...args: unknown[]): Promise<void> {
    try {
      await fn(...(args.slice(0, -1) as A));
    } catch (err) {
      fail(err, Boolean(this.optsWithGlobals<GlobalOptions>().json));
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
