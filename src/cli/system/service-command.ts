import { Command } from 'commander';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { localAction, parseIntOption } from '../action.js';
import { confirm } from '../confirm.js';
import { CliError, projectRoot, UsageError, type GlobalOptions } from '../context.js';
import { io } from '../io.js';
import { emit, err, keyValues, out, style } from '../output.js';
import { CONFIG_FILE } from '../../config/find.js';
import { ensurePrivateDir } from '../../lib/files.js';
import { runningDaemon } from '../../state-dir.js';
import { follow, tailLines } from './logs-command.js';
import { DAEMON_SERVICE, launchdLogFile, renderLaunchdPlist, renderSystemdUnit, serviceNames, type ServiceRole, type ServiceSpec } from './service-unit.js';
import { svcInvocation, type SvcInvocation } from '../../lib/entry.js';

// `svc service`: the daemon as a user service, restarted by the OS when it fails. Linux: a systemd
// --user unit; macOS: a launchd agent. Every external program is run through one Runner, found on
// the run's PATH, so the tests put fake systemctl/journalctl/loginctl there. `svc notify` installs
// its receiver the same way, with the subcommands serviceSubcommands() makes for another role.

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The program is not installed. */
  missing?: boolean;
}

export type Runner = (cmd: string, args: string[], opts?: { timeoutMs?: number; passthrough?: boolean }) => Promise<Ran>;

const TOOL_TIMEOUT_MS = 30_000;
/** `svc status` must stay quick: the service line is given up on after this. */
export const STATUS_TIMEOUT_MS = 1_500;

/**
 * Runs a program with the run's environment; with passthrough its output goes straight to the
 * run's streams. Past the timeout it is killed and given up on at once, even if something it
 * started still holds its output open.
 */
export const runTool: Runner = (cmd, args, opts = {}) =>
  new Promise((resolve) => {
    const { env, stdout, stderr } = io();
    let out = '';
    let errText = '';
    let settled = false;
    const done = (r: Ran) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const child = spawn(cmd, args, { env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          child.kill('SIGKILL');
          child.stdout.destroy();
          child.stderr.destroy();
          done({ code: null, stdout: out, stderr: `${cmd} did not answer within ${opts.timeoutMs} ms` });
        }, opts.timeoutMs)
      : undefined;
    // Decoded as a stream: a character split between two chunks stays whole.
    child.stdout.setEncoding('utf8').on('data', (c: string) => (opts.passthrough ? stdout.write(c) : (out += c)));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (opts.passthrough ? stderr.write(c) : (errText += c)));
    child.on('error', (e: NodeJS.ErrnoException) => done({ code: null, stdout: out, stderr: e.message, missing: e.code === 'ENOENT' }));
    child.on('close', (code, signal) => done({ code, stdout: out, stderr: errText || (signal ? `${cmd} was stopped by ${signal}` : '') }));
  });

/** This svc's command line: node and bin/svc, or the single executable. */
function svcCommand(): SvcInvocation {
  const svc = svcInvocation(import.meta.url);
  if (!svc) throw new CliError('cannot find bin/svc next to the svc package');
  return svc;
}

/** One name per directory however it was reached (a symlink, a trailing slash), so `svc status` finds the service it installed. */
const canonical = (dir: string): string => {
  try {
    return realpathSync(dir);
  } catch {
    return dir;
  }
};

function requireProject(globals: GlobalOptions): string {
  const root = projectRoot(globals);
  if (!root) throw new UsageError(`no ${CONFIG_FILE} here or in any parent directory`, 'pass --project DIR, or run `svc init` in the project first');
  if (!existsSync(join(root, CONFIG_FILE))) throw new UsageError(`no ${CONFIG_FILE} in ${root}`, 'pass the directory that holds the project.json');
  return canonical(root);
}

/** What the daemon needs from this shell that a service manager does not give it; secrets never go in. */
function serviceEnv(): Record<string, string> {
  const { env } = io();
  const picked: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'XDG_CONFIG_HOME', 'SVC_CONFIG_DIR', 'SVC_KEYCHAIN']) if (env[k]) picked[k] = env[k]!;
  picked.HOME ??= homedir();
  return picked;
}

const specFor = (project: string, role: ServiceRole): ServiceSpec => {
  const { program, script } = svcCommand();
  return { project, node: program, ...(script ? { script } : {}), env: serviceEnv(), ...(role === DAEMON_SERVICE ? {} : { role }) };
};

type Platform = 'systemd' | 'launchd';

function platform(role: ServiceRole = DAEMON_SERVICE): Platform {
  if (process.platform === 'linux') return 'systemd';
  if (process.platform === 'darwin') return 'launchd';
  throw new UsageError(
    `${role.command} supports Linux (systemd) and macOS (launchd), not ${process.platform}`,
    `${role.withoutService.replace(/^or /, '')}, or start it from your own service manager`,
  );
}

/** Where the service's file goes, and its name for the service manager. */
function location(p: Platform, project: string, role: ServiceRole = DAEMON_SERVICE): { name: string; file: string } {
  const names = serviceNames(project, role);
  const { env } = io();
  const home = env.HOME || homedir();
  if (p === 'systemd') return { name: names.unit, file: join(env.XDG_CONFIG_HOME || join(home, '.config'), 'systemd', 'user', names.unit) };
  return { name: names.label, file: join(home, 'Library', 'LaunchAgents', `${names.label}.plist`) };
}

const render = (p: Platform, project: string, role: ServiceRole): string =>
  p === 'systemd' ? renderSystemdUnit(specFor(project, role)) : renderLaunchdPlist(specFor(project, role), serviceNames(project, role).label);

// ---- systemd ---------------------------------------------------------------------------------

/** systemctl's words when it finds no user service manager to talk to. */
const NO_MANAGER = /Failed to connect to (user scope )?bus|DBUS_SESSION_BUS_ADDRESS|XDG_RUNTIME_DIR|No medium found/i;

function userName(): string {
  try {
    return io().env.USER || userInfo().username;
  } catch {
    return String(process.getuid?.() ?? 'USER');
  }
}

/** logind's view of this user: whether it lingers, and whether it has a session at all (null: no logind). */
async function loginState(run: Runner): Promise<{ linger: boolean; session: boolean } | null> {
  const r = await run('loginctl', ['show-user', userName(), '-p', 'Linger', '-p', 'State'], { timeoutMs: STATUS_TIMEOUT_MS });
  if (r.code !== 0) return null;
  const v = props(r.stdout);
  return { linger: v.Linger === 'yes', session: v.State === 'active' || v.State === 'online' };
}

const LINGER = (user: string) => `\`sudo loginctl enable-linger ${user}\``;

/** systemctl --user found no user service manager to talk to. */
class NoManagerError extends CliError {}

async function noManagerError(run: Runner, said: string): Promise<CliError> {
  const login = await loginState(run);
  const user = userName();
  const first = said.trim().split('\n')[0];
  const hint = !login?.session
    ? `there is no login session for ${user}, so no user service manager runs: ${LINGER(user)} starts one now and at every boot; then run this again (over ssh or su, with XDG_RUNTIME_DIR=/run/user/$(id -u))`
    : 'run it in your own login session (not under sudo), or set XDG_RUNTIME_DIR=/run/user/$(id -u)';
  return new NoManagerError(`systemctl --user cannot reach a user service manager (${first})`, hint);
}

/** systemctl --user, failing with the reason (and the linger hint) when there is no user manager. */
async function systemctl(run: Runner, args: string[], timeoutMs = TOOL_TIMEOUT_MS): Promise<Ran> {
  const r = await run('systemctl', ['--user', ...args], { timeoutMs });
  if (r.missing) throw new CliError('systemctl was not found: this system does not run systemd', 'run `svc serve --detach` instead');
  if (r.code !== 0 && NO_MANAGER.test(r.stderr)) throw await noManagerError(run, r.stderr);
  return r;
}

async function systemctlOk(run: Runner, args: string[]): Promise<void> {
  const r = await systemctl(run, args);
  if (r.code !== 0) throw new CliError(`systemctl --user ${args.join(' ')} failed: ${r.stderr.trim() || `exit ${r.code}`}`);
}

const props = (text: string): Record<string, string> =>
  Object.fromEntries(
    text
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).trim()]),
  );

export interface ServiceState {
  platform: Platform;
  /** The unit (systemd) or label (launchd). */
  name: string;
  file: string;
  installed: boolean;
  /** null: the service manager did not answer. */
  running: boolean | null;
  /** systemd: ActiveState (SubState); launchd: its state. */
  state?: string;
  pid?: number;
  enabled?: string;
}

interface StateOptions {
  timeoutMs: number;
  /** Ask even when no unit is installed (install: is there a user manager at all?). */
  always?: boolean;
  /** false: no time spent explaining a missing user manager (`svc status` only wants the answer). */
  explain?: boolean;
}

async function systemdState(run: Runner, name: string, file: string, o: StateOptions): Promise<ServiceState> {
  const base: ServiceState = { platform: 'systemd', name, file, installed: existsSync(file), running: false };
  if (!base.installed && !o.always) return base;
  const args = ['show', '-p', 'ActiveState,SubState,MainPID,UnitFileState', name];
  const r = o.explain === false ? await run('systemctl', ['--user', ...args], { timeoutMs: o.timeoutMs }) : await systemctl(run, args, o.timeoutMs);
  if (r.code !== 0) throw new CliError(`systemctl --user show ${name} failed: ${r.stderr.trim() || `exit ${r.code}`}`);
  const v = props(r.stdout);
  const pid = Number(v.MainPID);
  return {
    ...base,
    running: v.ActiveState === 'active' && v.SubState === 'running',
    state: v.SubState && v.SubState !== v.ActiveState ? `${v.ActiveState} (${v.SubState})` : v.ActiveState,
    pid: pid > 0 ? pid : undefined,
    enabled: v.UnitFileState || undefined,
  };
}

// ---- launchd (untested: no macOS in CI) -------------------------------------------------------

const domain = () => `gui/${process.getuid!()}`;

async function launchctl(run: Runner, args: string[], timeoutMs = TOOL_TIMEOUT_MS): Promise<Ran> {
  const r = await run('launchctl', args, { timeoutMs });
  if (r.missing) throw new CliError('launchctl was not found');
  return r;
}

async function launchdState(run: Runner, name: string, file: string, timeoutMs: number): Promise<ServiceState> {
  const base: ServiceState = { platform: 'launchd', name, file, installed: existsSync(file), running: false };
  if (!base.installed) return base;
  const r = await launchctl(run, ['print', `${domain()}/${name}`], timeoutMs);
  if (r.code !== 0) return { ...base, state: 'not loaded' };
  const state = /^\s*state = (.+)$/m.exec(r.stdout)?.[1]?.trim();
  const pid = Number(/^\s*pid = (\d+)$/m.exec(r.stdout)?.[1]);
  return { ...base, running: state === 'running', state: state ?? 'loaded', pid: pid > 0 ? pid : undefined };
}

// ---- the operations ---------------------------------------------------------------------------

async function currentState(run: Runner, p: Platform, project: string, o: StateOptions = { timeoutMs: TOOL_TIMEOUT_MS }, role: ServiceRole = DAEMON_SERVICE): Promise<ServiceState> {
  const { name, file } = location(p, project, role);
  return p === 'systemd' ? systemdState(run, name, file, o) : launchdState(run, name, file, o.timeoutMs);
}

/** For `svc status`: the project's service, or null where there are no services; never throws, never slow. */
export async function serviceSummary(root: string, run: Runner = runTool): Promise<ServiceState | null> {
  if (process.platform !== 'linux' && process.platform !== 'darwin') return null;
  const p = platform();
  const project = canonical(root);
  try {
    return await currentState(run, p, project, { timeoutMs: STATUS_TIMEOUT_MS, explain: false });
  } catch {
    const { name, file } = location(p, project);
    return { platform: p, name, file, installed: true, running: null, state: 'unknown' };
  }
}

/** The service in a few words, for `svc status` and `svc service status`. */
export function describeService(s: ServiceState): string {
  if (!s.installed) return `${s.name}: not installed`;
  if (s.running === null) return `${s.name}: installed; the service manager did not answer`;
  if (s.running) return `${s.name}: installed, running${s.pid ? ` (pid ${s.pid})` : ''}`;
  return `${s.name}: installed, not running${s.state ? `: ${s.state}` : ''}`;
}

async function install(run: Runner, p: Platform, project: string, role: ServiceRole): Promise<{ changed: boolean; file: string; name: string }> {
  const content = render(p, project, role);
  const { name, file } = location(p, project, role);
  // Before anything is written: without a user manager there is nothing to install into.
  const before = await currentState(run, p, project, { timeoutMs: TOOL_TIMEOUT_MS, always: true }, role);
  // The service's `svc serve` would refuse to start next to a daemon it does not own, and retry.
  const daemon = role === DAEMON_SERVICE ? runningDaemon(project) : null;
  if (daemon && !(before.running && before.pid === daemon.pid)) {
    throw new CliError(`svc already runs for this project outside the service (pid ${daemon.pid})`, '`svc stop` first, then install the service again');
  }
  const changed = !existsSync(file) || readFileSync(file, 'utf8') !== content;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, content, { mode: 0o644 });
  if (p === 'systemd') {
    await systemctlOk(run, ['daemon-reload']);
    await systemctlOk(run, ['enable', '--now', name]);
    // enable --now leaves a running service as it is: a changed unit applies only after a restart.
    if (changed && before.running) await systemctlOk(run, ['restart', name]);
  } else {
    ensurePrivateDir(dirname(launchdLogFile(project, role)));
    if (before.state && before.state !== 'not loaded') await launchctl(run, ['bootout', `${domain()}/${name}`]);
    const r = await launchctl(run, ['bootstrap', domain(), file]);
    if (r.code !== 0) throw new CliError(`launchctl bootstrap failed: ${r.stderr.trim() || `exit ${r.code}`}`);
  }
  return { changed, file, name };
}

async function uninstall(run: Runner, p: Platform, _project: string, name: string, file: string): Promise<void> {
  if (p === 'systemd') {
    const r = await systemctl(run, ['disable', '--now', name]);
    // A file the manager never loaded (written under another XDG_CONFIG_HOME) is only deleted.
    if (r.code !== 0 && !/does not exist|not loaded|No such file/i.test(r.stderr)) throw new CliError(`systemctl --user disable --now ${name} failed: ${r.stderr.trim() || `exit ${r.code}`}`);
    rmSync(file, { force: true });
    await systemctlOk(run, ['daemon-reload']);
  } else {
    await launchctl(run, ['bootout', `${domain()}/${name}`]);
    rmSync(file, { force: true });
  }
}

async function lingerNote(run: Runner): Promise<void> {
  const login = await loginState(run);
  if (login && !login.linger) err(style.dim(`note: it stops when your last session ends and starts again at your next login; to keep it running without a login, ${LINGER(userName())}\n`));
}

export function serviceCommand(run: Runner = runTool): Command {
  const cmd = new Command('service').description('Run the daemon as a user service (systemd --user on Linux, launchd on macOS), restarted when it fails');
  for (const sub of serviceSubcommands(run, DAEMON_SERVICE)) cmd.addCommand(sub);
  return cmd;
}

/**
 * install, uninstall, status and logs of a role's service; `check` runs before install writes
 * anything (svc notify: is the notifier there?).
 */
export function serviceSubcommands(run: Runner, role: ServiceRole, check?: () => Promise<void>): Command[] {
  const install_ = new Command('install')
    .description('Write the service for the project (--project DIR, default: this one), enable and start it')
    .option('--dry-run', 'print the unit file (plist on macOS) and change nothing')
    .action(
      localAction(async (globals, o: { dryRun?: boolean }) => {
        const p = platform(role);
        const project = requireProject(globals);
        if (o.dryRun) {
          const content = render(p, project, role);
          emit(Boolean(globals.json), { ...location(p, project, role), content }, () => content);
          return;
        }
        await check?.();
        const r = await install(run, p, project, role).catch((e: unknown) => {
          throw e instanceof NoManagerError ? new CliError(e.message, `${e.hint}; ${role.withoutService}`) : e;
        });
        emit(Boolean(globals.json), { installed: true, platform: p, ...r }, () => `installed ${r.name} (${r.file}) and started it\n${role.installed}\n`);
        if (p === 'systemd' && !globals.json) await lingerNote(run);
      }),
    );

  const uninstall_ = new Command('uninstall')
    .description('Stop and disable the service and delete its file (the project and its .svc/ stay)')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      localAction(async (globals) => {
        const p = platform(role);
        const project = requireProject(globals);
        const { name, file } = location(p, project, role);
        if (!existsSync(file)) {
          emit(Boolean(globals.json), { removed: false, name, file }, () => `${name} is not installed; nothing to do\n`);
          return;
        }
        await confirm(`stop ${role.noun} and remove the service ${name}?`, Boolean(globals.yes), `${role.command} uninstall`);
        await uninstall(run, p, project, name, file);
        emit(Boolean(globals.json), { removed: true, name, file }, () => `stopped and removed ${name} (${file})\n`);
      }),
    );

  const status = new Command('status').description("Whether the project's service is installed, enabled and running").action(
    localAction(async (globals) => {
      const s = await currentState(run, platform(role), requireProject(globals), undefined, role);
      emit(Boolean(globals.json), s, () =>
        keyValues({
          service: s.name,
          file: s.file,
          installed: s.installed ? 'yes' : 'no',
          ...(s.installed ? { running: s.running ? 'yes' : 'no', state: s.state, pid: s.pid, enabled: s.enabled } : {}),
        }),
      );
    }),
  );

  const logs = new Command('logs')
    .description(`The service's output: journalctl --user on Linux, .svc/logs/${role.logFile} on macOS`)
    .option('-n, --lines <n>', 'how many of the last lines to print (default 50)', parseIntOption('--lines'))
    .option('-f, --follow', 'keep printing new lines as they come (Ctrl-C to stop)')
    .action(
      localAction(async (globals, o: { lines?: number; follow?: boolean }) => {
        const p = platform(role);
        const project = requireProject(globals);
        const n = o.lines ?? 50;
        if (n < 0) throw new UsageError('--lines must be 0 or more');
        // Ctrl-C reaches journalctl too: this process waits for it to end rather than die first.
        const keep = () => undefined;
        if (o.follow) process.on('SIGINT', keep);
        try {
          if (p === 'systemd') await journal(run, location(p, project, role).name, n, Boolean(o.follow), Boolean(globals.json));
          else await launchdLogs(launchdLogFile(project, role), n, Boolean(o.follow));
        } finally {
          process.off('SIGINT', keep);
        }
      }),
    );
  return [install_, uninstall_, status, logs];
}

async function journal(run: Runner, unit: string, n: number, followIt: boolean, json: boolean): Promise<void> {
  const args = ['--user', '-u', unit, '-n', String(n), '--no-pager', ...(followIt ? ['-f'] : []), ...(json ? ['-o', 'json'] : [])];
  const r = await run('journalctl', args, { passthrough: true });
  if (r.missing) throw new CliError('journalctl was not found: this system does not run systemd');
  if (r.code !== 0 && !followIt) throw new CliError(`journalctl ${args.join(' ')} exited ${r.code ?? 'on a signal'}`);
}

async function launchdLogs(file: string, n: number, followIt: boolean): Promise<void> {
  const { lines, size } = tailLines(file, n);
  for (const l of lines) out(l + '\n');
  if (!followIt) return;
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once('SIGINT', stop);
  try {
    await follow(file, size, (l) => out(l + '\n'), abort.signal);
  } finally {
    process.off('SIGINT', stop);
  }
}
