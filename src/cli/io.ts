import { AsyncLocalStorage } from 'node:async_hooks';

// Where one CLI run reads and writes: the process's streams for the real binary, strings in
// memory for the in-process runner the tests use. A run's commands reach it through io() rather
// than through process.stdout and process.env, so two runs in one process never mix their output.

export interface OutStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface InStream extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

export interface CliIo {
  stdout: OutStream;
  stderr: OutStream;
  stdin: InStream;
  env: Record<string, string | undefined>;
  cwd: string;
  /** A person at the keyboard: prompts and confirmations may ask. */
  interactive: boolean;
  /** Colour on stdout and stderr (a TTY, and NO_COLOR unset). */
  color: boolean;
  /** Width to lay tables out in. */
  columns: number;
  exitCode: number;
}

const store = new AsyncLocalStorage<CliIo>();

/** The IO of the process itself, for code that runs outside run() (the library's own tools). */
function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    interactive: Boolean(process.stdin.isTTY && process.stderr.isTTY),
    color: Boolean(process.stdout.isTTY) && !process.env.NO_COLOR,
    columns: process.stdout.columns || 100,
    exitCode: 0,
  };
}

/** The IO of the run that is the process itself (bin/svc), when there is one. */
let own: CliIo | null = null;

export const io = (): CliIo => store.getStore() ?? own ?? processIo();

/**
 * Runs `fn` with `value` as its IO. A run that is the process itself sets the process's IO
 * rather than entering the AsyncLocalStorage: on Node 20 a storage once entered installs promise
 * hooks that tax every promise of the process for its whole life, and `svc serve` is long-lived.
 */
export function withIo<T>(value: CliIo, fn: () => Promise<T>, scope: 'run' | 'process' = 'run'): Promise<T> {
  if (scope === 'run') return store.run(value, fn);
  own = value;
  return fn();
}
