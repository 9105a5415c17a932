import { Command, CommanderError } from 'commander';
import { Readable } from 'node:stream';
import { packageVersion } from '../lib/version.js';
import { fail } from './action.js';
import { useEndpointWords } from './api-words.js';
import { COMMANDS, ENDPOINT_WORDS } from './commands.js';
import { EXIT, UsageError } from './context.js';
import { withIo, type CliIo, type InStream, type OutStream } from './io.js';

export interface RunOptions {
  stdout: OutStream;
  stderr: OutStream;
  env: Record<string, string | undefined>;
  stdin?: InStream;
  /** A person at a terminal: colour (unless NO_COLOR), prompts and confirmations. Default: the streams' own isTTY. */
  isTTY?: boolean;
  cwd?: string;
  /** Terminal width (default: stdout's, else 100). */
  columns?: number;
  /** This run is the process (bin/svc), not one of several in it (tests): see withIo. */
  process?: boolean;
}

/** Global options that take a value: the word after them is not the command's name. */
const VALUE_OPTIONS = new Set(['--project', '--url', '--api-key']);

/** The first word that is not a global option: the command to load. */
function commandWord(argv: string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return argv[i + 1];
    if (VALUE_OPTIONS.has(a)) i++;
    else if (!a.startsWith('-')) return a;
  }
  return undefined;
}

/** Builds the program with the commands `argv` needs loaded; the others appear in help by summary. */
export async function buildProgram(argv: string[], all = false): Promise<Command> {
  const program = new Command('svc')
    .description('Control plane for teams of AI coding agents. Every command but init, serve and doctor talks to the daemon over HTTP.')
    .version(packageVersion())
    .option('--project <dir>', 'project directory (default: nearest project.json upwards, or SVC_PROJECT)')
    .option('--url <url>', 'daemon URL (default: from .svc/daemon.json, or SVC_URL)')
    .option('--api-key <key>', 'API key (default: SERVICE_API_KEY, then .svc/local.key)')
    .option('--json', 'print JSON instead of tables (errors too, on stderr)')
    .showHelpAfterError('(run `svc --help` for the commands, or `svc <command> --help`)');
  let word = commandWord(argv);
  if (word === 'help') word = commandWord(argv.slice(argv.indexOf('help') + 1));
  const loadAll = all || word === 'completion';
  for (const entry of COMMANDS) {
    if (loadAll || entry.name === word) program.addCommand(await entry.load());
    else program.command(entry.name).description(entry.summary);
  }
  return program;
}

/**
 * Usage errors exit 2 everywhere (commander's default is 1, which we keep for API errors). With
 * --json, commander's own error text is held back: run() prints the error as JSON instead.
 */
function configure(cmd: Command, io: CliIo, json: boolean): void {
  cmd.exitOverride();
  cmd.configureOutput({
    writeOut: (s) => void io.stdout.write(s),
    writeErr: (s) => void (json ? undefined : io.stderr.write(s)),
    getOutHelpWidth: () => io.columns,
    getErrHelpWidth: () => io.columns,
    getOutHasColors: () => io.color,
    getErrHasColors: () => io.color,
  });
  cmd.commands.forEach((c) => configure(c, io, json));
}

/**
 * Runs the CLI with `argv` (the words after `svc`) against the given streams and environment, and
 * resolves to the exit code. bin/svc runs it with the process's own; tests run it in-process.
 */
export async function run(argv: string[], opts: RunOptions): Promise<number> {
  useEndpointWords(ENDPOINT_WORDS);
  const tty = opts.isTTY ?? Boolean(opts.stdout.isTTY);
  const io: CliIo = {
    stdout: opts.stdout,
    stderr: opts.stderr,
    stdin: opts.stdin ?? (emptyStdin() as InStream),
    env: opts.env,
    cwd: opts.cwd ?? process.cwd(),
    interactive: opts.isTTY ?? Boolean(opts.stdin?.isTTY && opts.stderr.isTTY),
    color: tty && !opts.env.NO_COLOR,
    columns: opts.columns ?? (opts.stdout.columns || 100),
    exitCode: EXIT.ok,
  };
  const json = argv.includes('--json');
  return withIo(
    io,
    async () => {
      try {
        const program = await buildProgram(argv);
        configure(program, io, json);
        await program.parseAsync(argv, { from: 'user' });
      } catch (err) {
        if (err instanceof CommanderError) {
          const benign = ['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(err.code);
          io.exitCode = benign ? EXIT.ok : EXIT.usage;
          if (!benign && json) fail(new UsageError(err.message.replace(/^error: /, ''), 'run `svc --help` for the commands, or `svc <command> --help`'), true);
        } else {
          fail(err, json);
        }
      }
      return io.exitCode;
    },
    opts.process ? 'process' : 'run',
  );
}

/** A run given no stdin reads an empty one (a prompt then ends at once, as with `< /dev/null`). */
const emptyStdin = (): NodeJS.ReadableStream => Readable.from([]);
