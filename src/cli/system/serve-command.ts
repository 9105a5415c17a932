import { Command, Option } from 'commander';
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { action, localAction, parseIntOption } from '../action.js';
import { CliError, projectRoot, UsageError, type CliContext, type GlobalOptions } from '../context.js';
import { io } from '../io.js';
import { prettyLogSink } from '../log-format.js';
import { emit, err, style } from '../output.js';
import { SvcClient, UnreachableError } from '../../client/client.js';
import { svcInvocation } from '../../lib/entry.js';
import { CONFIG_FILE } from '../../config/find.js';
import { ensurePrivateDir } from '../../lib/files.js';
import { pidAlive } from '../../lib/proc.js';
import { daemonCa, readLocalKey, removeDaemonInfo, runningDaemon, statePaths, type DaemonInfo } from '../../state-dir.js';
import { monotonic } from '../../lib/clock.js';

// Running the daemon: in the foreground (`svc serve`, readable on a terminal), in the background
// (`--detach`, returns once it answers), and stopping or restarting it (returns once it has exited).

const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 10_000;
const POLL_MS = 50;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** This svc's command line: node and bin/svc, or the single executable. */
function svcCommand(): string[] {
  const svc = svcInvocation(import.meta.url);
  if (!svc) throw new Error('cannot find bin/svc next to the svc package');
  return svc.script ? [svc.program, svc.script] : [svc.program];
}

function requireRoot(opts: GlobalOptions): string {
  const root = projectRoot(opts);
  if (!root) throw new UsageError(`no ${CONFIG_FILE} here or in any parent directory`, 'run `svc init` to create one, or pass --project DIR');
  return root;
}

interface ServeOptions {
  host?: string;
  port?: number;
  detach?: boolean;
  logFormat?: 'pretty' | 'json';
}

function serveArgs(o: ServeOptions): string[] {
  const args: string[] = [];
  if (o.host !== undefined) args.push('--host', o.host);
  if (o.port !== undefined) args.push('--port', String(o.port));
  return args;
}

/**
 * Starts `svc serve` as a detached background process and resolves once its healthz answers. Its
 * log goes to .svc/logs/daemon.log; what it prints before the log opens (a bad project.json, a
 * busy port) goes to .svc/logs/serve.out, and is shown here when it fails to start.
 */
async function startDetached(root: string, o: ServeOptions): Promise<DaemonInfo> {
  const paths = statePaths(root);
  ensurePrivateDir(paths.logs);
  const outFile = join(paths.logs, 'serve.out');
  const fd = openSync(outFile, 'w', 0o600);
  const env = { ...io().env };
  delete env.SVC_URL;
  const [program, ...prefix] = svcCommand();
  const child = spawn(program!, [...prefix, '--project', root, 'serve', '--log-format', 'json', ...serveArgs(o)], {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'ignore', fd],
  });
  closeSync(fd);
  let exited: number | null = null;
  child.once('exit', (code, signal) => (exited = code ?? (signal ? 1 : 0)));
  child.unref();
  const pid = child.pid!;
  const deadline = monotonic() + START_TIMEOUT_MS;
  while (monotonic() < deadline) {
    if (exited !== null) {
      const said = readFileSync(outFile, 'utf8').trim();
      throw new CliError(`svc serve exited (${exited}) before it answered${said ? `:\n${said}` : ''}`, `see ${outFile} and \`svc logs\``);
    }
    const info = runningDaemon(root);
    if (info && info.pid === pid) {
      try {
        await new SvcClient({ url: info.url, timeoutMs: 1000, ca: daemonCa(info) }).get('/healthz');
        return info;
      } catch {
        // listening, not answering yet
      }
    }
    await sleep(POLL_MS);
  }
  throw new CliError(`svc serve (pid ${pid}) did not answer within ${START_TIMEOUT_MS / 1000} s`, `see \`svc logs\`; stop it with \`kill ${pid}\``);
}

/** Runs the daemon in this process until a signal or POST /api/v1/shutdown stops it. */
async function serveForeground(root: string, o: ServeOptions): Promise<void> {
  const { stdout, env } = io();
  const pretty = (o.logFormat ?? (stdout.isTTY ? 'pretty' : 'json')) === 'pretty';
  const write = (text: string) => void stdout.write(text);
  const { startDaemon } = await import('../../daemon.js');
  let daemon: Awaited<ReturnType<typeof startDaemon>> | undefined;
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals === 1) {
      if (pretty) err(style.dim('shutting down; press Ctrl-C again to quit at once\n'));
      // A signal during start-up is acted on once the daemon has started (below).
      if (daemon) void daemon.close();
      return;
    }
    // A second signal during the grace period: quit now, but never leave a daemon.json behind that
    // names a process that is gone (the CLI would think the daemon is still running).
    removeDaemonInfo(root, process.pid);
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  // Listening before the daemon starts: a signal that comes while it starts (or right after it
  // logs that it listens) must not kill the process with the default action.
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    // JSON lines to the process's own stdout go the daemon's default way (off the event loop); a
    // terminal gets them readable, and an in-process run (tests) gets them in its own stream.
    const console = pretty ? prettyLogSink(write, { quietStart: true }) : stdout === process.stdout ? undefined : write;
    daemon = await startDaemon({ root, host: o.host, port: o.port, env: env as NodeJS.ProcessEnv, console });
    if (signals) void daemon.close();
    await daemon.closed;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export function serveCommand(): Command {
  return new Command('serve')
    .description('Run the daemon for this project: in the foreground, or in the background with --detach')
    .option('--host <host>', 'address to listen on (default: project.json server.host, 127.0.0.1)')
    .option('--port <port>', 'port to listen on; 0 picks a free one (default: project.json server.port, 7420)', parseIntOption('--port'))
    .option('-d, --detach', 'run in the background (log in .svc/logs/daemon.log); return once it answers')
    .addOption(new Option('--log-format <format>', 'terminal output: pretty (default on a TTY) or json (default otherwise); the log file is always JSON').choices(['pretty', 'json']))
    .action(
      localAction(async (globals, o: ServeOptions) => {
        const root = requireRoot(globals);
        const running = runningDaemon(root);
        if (running && running.pid !== process.pid) {
          throw new CliError(`svc is already running for this project (pid ${running.pid}, ${running.url})`, '`svc stop` first, or `svc restart`');
        }
        if (!o.detach) return serveForeground(root, o);
        const info = await startDetached(root, o);
        emit(Boolean(globals.json), info, () => `svc ${info.version} running in the background on ${info.url} (pid ${info.pid})\nlogs: svc logs -f · stop: svc stop\n`);
      }),
    );
}

/**
 * Asks the daemon to shut down and waits until its process has exited (so `svc stop && svc serve`
 * works); a daemon that is still there after 10 s is an error naming its pid.
 */
export async function stopDaemon(ctx: CliContext, timeoutMs = STOP_TIMEOUT_MS): Promise<DaemonInfo | null> {
  const info = ctx.root ? runningDaemon(ctx.root) : null;
  await ctx.client.post('/api/v1/shutdown');
  const deadline = monotonic() + timeoutMs;
  while (monotonic() < deadline) {
    if (info ? !pidAlive(info.pid) : await gone(ctx.client)) return info;
    await sleep(POLL_MS);
  }
  throw new CliError(`the daemon${info ? ` (pid ${info.pid})` : ''} did not exit within ${timeoutMs / 1000} s`, info ? `see \`svc logs\`; end it with \`kill ${info.pid}\`` : 'see `svc logs`');
}

async function gone(client: SvcClient): Promise<boolean> {
  try {
    await client.get('/healthz');
    return false;
  } catch (e) {
    return e instanceof UnreachableError;
  }
}

export function stopCommand(): Command {
  return new Command('stop').description('Stop the daemon gracefully and wait until it has exited').action(
    action(async (ctx) => {
      const info = await stopDaemon(ctx);
      emit(ctx.json, { stopped: true, pid: info?.pid ?? null }, () => `stopped${info ? ` (pid ${info.pid})` : ''}\n`);
    }),
  );
}

/**
 * Throws, naming what fails, when a daemon started from this shell could not start (start-checks.ts):
 * the running daemon is then left alone.
 */
async function restartable(root: string, host: string | undefined, pid: number): Promise<void> {
  const { startProblems } = await import('./start-checks.js');
  const problems = await startProblems(root, host, io().env as NodeJS.ProcessEnv);
  if (problems.length) {
    throw new CliError(
      `not restarting: from this shell the daemon could not start again:\n${problems.map((r) => `  ${r.check}: ${r.detail}`).join('\n')}`,
      `the daemon (pid ${pid}) was left running. Set what is missing in this shell, or keep the URLs and the vault key in the project's settings file (project.json envFile; docs/deploy.md)`,
    );
  }
}

export function restartCommand(): Command {
  return new Command('restart')
    .description('Stop the daemon (if it runs) and start it in the background; it keeps its address unless --host/--port say otherwise')
    .option('--host <host>', 'address to listen on')
    .option('--port <port>', 'port to listen on; 0 picks a free one', parseIntOption('--port'))
    .action(
      localAction(async (globals, o: ServeOptions) => {
        const root = requireRoot(globals);
        const before = runningDaemon(root);
        if (before) {
          // Never stop a daemon that could not be started again from here: check first.
          await restartable(root, o.host ?? before.host, before.pid);
          const apiKey = globals.apiKey || io().env.SERVICE_API_KEY || readLocalKey(root);
          await stopDaemon({ json: false, yes: false, root, client: new SvcClient({ url: before.url, apiKey, ca: daemonCa(before) }) });
        }
        const info = await startDetached(root, { host: o.host ?? before?.host, port: o.port ?? before?.port });
        emit(Boolean(globals.json), info, () => `${before ? `restarted (pid ${before.pid} → ${info.pid})` : 'started'}; svc ${info.version} on ${info.url}\n`);
      }),
    );
}
