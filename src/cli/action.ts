import { InvalidArgumentError, type Command } from 'commander';
import { ApiError, UnreachableError } from '../client/client.js';
import { cliContext, EXIT, UsageError, type CliContext } from './context.js';
import { style } from './output.js';

/** Reports a failure the way every command does and sets the exit code. */
export function fail(err: unknown): void {
  if (err instanceof ApiError) {
    process.stderr.write(`${style.red('error')} ${err.code} (${err.status}): ${err.message}\n`);
    for (const d of err.details ?? []) process.stderr.write(`  ${d.path}: ${d.message}\n`);
    process.exitCode = EXIT.api;
  } else if (err instanceof UnreachableError) {
    process.stderr.write(`${style.red('error')} ${err.message}.\nhint: start it in the project with \`svc serve\` (or pass --url).\n`);
    process.exitCode = EXIT.unreachable;
  } else if (err instanceof UsageError) {
    process.stderr.write(`${style.red('error')} ${err.message}\n`);
    process.exitCode = EXIT.usage;
  } else {
    process.stderr.write(`${style.red('error')} ${(err as Error)?.message ?? String(err)}\n`);
    process.exitCode = EXIT.api;
  }
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
      fail(err);
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
