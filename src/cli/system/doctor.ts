import { Command } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { localAction } from '../action.js';
import { isLoopbackUrl, projectRoot, type GlobalOptions } from '../context.js';
import { io } from '../io.js';
import { emit, style } from '../output.js';
import { ApiError, SvcClient } from '../../client/client.js';
import { CONFIG_FILE, formatIssues, loadConfig } from '../../config/load.js';
import type { ProjectConfig } from '../../config/schema.js';
import { daemonCa, readDaemonInfo, readLocalKey, runningDaemon, statePaths, type DaemonInfo } from '../../state-dir.js';
import type { CheckResult, CheckStatus } from '../../resources/system/doctor-state.js';
import type { SetupReport } from '../../resources/system/setup.js';

// `svc doctor`: what could stop svc from working here, one line per check, with the fix for each
// that fails. It reads the project's files and asks the daemon; it changes nothing.

export type { CheckResult, CheckStatus } from '../../resources/system/doctor-state.js';

/** The oldest minor of each supported line, as package.json's engines says: require(esm), which CommonJS consumers of the package need, came in 20.19 and 22.12. */
const MIN_MINOR: Record<number, number> = { 20: 19, 22: 12, 24: 0 };
/** The newest line CI runs svc on (.ci/run): a newer one may work, but nothing says so yet. */
const NEWEST_TESTED = 24;

export function checkNode(version: string): CheckResult {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  if (major > NEWEST_TESTED) return { check: 'node', status: 'warn', detail: `Node ${version} is newer than svc has been tested on (20, 22 and 24)`, fix: 'if something fails, use Node 24' };
  const ok = Object.hasOwn(MIN_MINOR, major) && minor >= MIN_MINOR[major]!;
  return ok ? { check: 'node', status: 'ok', detail: `Node ${version}` } : { check: 'node', status: 'fail', detail: `Node ${version} is not supported`, fix: 'install Node 24, 22.12+ or 20.19+' };
}

export function checkProject(root: string | null): { result: CheckResult; config: ProjectConfig | null } {
  if (!root) {
    return { result: { check: 'project', status: 'fail', detail: `no ${CONFIG_FILE} here or in any parent directory`, fix: 'run `svc init`, or pass --project DIR' }, config: null };
  }
  const loaded = loadConfig(root);
  if (!loaded.ok) {
    return {
      result: { check: 'project', status: 'fail', detail: `${root}/${CONFIG_FILE} is invalid: ${formatIssues(loaded.issues)}`, fix: `correct ${CONFIG_FILE} (see docs/configuration.md)` },
      config: null,
    };
  }
  const warn = loaded.warnings.length ? ` (${loaded.warnings.join('; ')})` : '';
  return { result: { check: 'project', status: loaded.warnings.length ? 'warn' : 'ok', detail: `${root}/${CONFIG_FILE}, project ${loaded.config.name}${warn}` }, config: loaded.config };
}

/** .svc/ must be the user's alone: it holds the local key and the database. */
export function checkStateDir(root: string): CheckResult {
  const paths = statePaths(root);
  if (!existsSync(paths.dir)) return { check: 'state dir', status: 'ok', detail: `${paths.dir} not created yet (svc serve creates it)` };
  const loose: string[] = [];
  const mode = (p: string) => statSync(p).mode & 0o777;
  const dirMode = mode(paths.dir);
  if (dirMode & 0o077) loose.push(`${paths.dir} is ${dirMode.toString(8)}`);
  if (existsSync(paths.localKey) && mode(paths.localKey) & 0o077) loose.push(`${paths.localKey} is ${mode(paths.localKey).toString(8)}`);
  if (typeof process.getuid === 'function' && statSync(paths.dir).uid !== process.getuid()) loose.push(`${paths.dir} belongs to another user`);
  if (loose.length) return { check: 'state dir', status: 'fail', detail: loose.join('; '), fix: `chmod 700 ${paths.dir} && chmod 600 ${paths.localKey}` };
  return { check: 'state dir', status: 'ok', detail: `${paths.dir} is private (${dirMode.toString(8)})` };
}

export async function checkDaemon(root: string): Promise<{ result: CheckResult; info: DaemonInfo | null }> {
  const info = runningDaemon(root);
  if (!info) {
    const stale = readDaemonInfo(root);
    const detail = stale ? `not running (.svc/daemon.json names pid ${stale.pid}, which is gone)` : 'not running';
    return { result: { check: 'daemon', status: 'fail', detail, fix: 'start it with `svc serve --detach` (or `svc serve` in a terminal)' }, info: null };
  }
  try {
    const h = await new SvcClient({ url: info.url, timeoutMs: 2000, ca: daemonCa(info) }).get<{ version: string }>('/healthz');
    return { result: { check: 'daemon', status: 'ok', detail: `pid ${info.pid} answers on ${info.url} (svc ${h.version})` }, info };
  } catch (e) {
    return {
      result: {
        check: 'daemon',
        status: 'fail',
        detail: `pid ${info.pid} does not answer on ${info.url}: ${(e as Error).message}`,
        fix: `see \`svc logs\`; restart it with \`svc restart\` (or \`kill ${info.pid}\`)`,
      },
      info,
    };
  }
}

/** The key check, and a client with that key when the daemon accepts it (to ask it what only it knows). */
export async function checkKey(root: string, info: DaemonInfo | null, g: GlobalOptions): Promise<{ result: CheckResult; client: SvcClient | null }> {
  if (!info) return { result: { check: 'api key', status: 'skip', detail: 'no daemon to try it on' }, client: null };
  const { env } = io();
  const url = g.url || env.SVC_URL || info.url;
  const fromFlag = g.apiKey ? '--api-key' : env.SERVICE_API_KEY ? 'SERVICE_API_KEY' : null;
  const key = g.apiKey || env.SERVICE_API_KEY || (isLoopbackUrl(url) ? readLocalKey(root) : undefined);
  const source = fromFlag ?? '.svc/local.key';
  if (!key)
    return {
      result: { check: 'api key', status: 'fail', detail: 'no key: none given and no .svc/local.key', fix: 'restart the daemon (`svc restart`) to create .svc/local.key, or set SERVICE_API_KEY' },
      client: null,
    };
  const client = (timeoutMs: number) => new SvcClient({ url, apiKey: key, timeoutMs, ca: url === info.url ? daemonCa(info) : undefined });
  try {
    await client(2000).get('/api/v1/status');
    // The daemon's own checks connect to its servers (5 s each at most).
    return { result: { check: 'api key', status: 'ok', detail: `the key from ${source} is accepted` }, client: client(15_000) };
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      const fix = fromFlag
        ? `${fromFlag} is not a key of this project: unset it to use .svc/local.key, or add it to project.json apiKeys`
        : 'restart the daemon (`svc restart`): its key is not the one in .svc/local.key';
      return { result: { check: 'api key', status: 'fail', detail: `the key from ${source} is refused (401)`, fix }, client: null };
    }
    return { result: { check: 'api key', status: 'fail', detail: `the daemon did not answer: ${(e as Error).message}`, fix: 'see `svc logs`' }, client: null };
  }
}

/** What the running daemon says it runs on, or null when it cannot say (an older daemon, a key with grants). */
async function daemonSetup(client: SvcClient): Promise<SetupReport | null> {
  try {
    return await client.get<SetupReport>('/api/v1/status/setup');
  } catch {
    return null;
  }
}

function portFree(host: string, port: number): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', (e) => resolve(e as NodeJS.ErrnoException));
    s.listen(port, host, () => s.close(() => resolve(null)));
  });
}

export async function checkPort(config: ProjectConfig | null, info: DaemonInfo | null): Promise<CheckResult> {
  if (!config) return { check: 'port', status: 'skip', detail: 'no valid project.json' };
  const { host, port } = config.server;
  if (info && info.port === port) return { check: 'port', status: 'ok', detail: `${host}:${port} is held by this project's daemon (pid ${info.pid})` };
  if (port === 0) return { check: 'port', status: 'ok', detail: 'port 0: a free port is picked at each start' };
  const e = await portFree(host, port);
  if (!e) return { check: 'port', status: 'ok', detail: `${host}:${port} is free${info ? ` (the daemon runs on ${info.url})` : ''}` };
  if (e.code === 'EADDRINUSE') {
    // The daemon is up on a port of its own (svc serve --port 0, --port N): nothing fails now, but
    // a start without --port would.
    if (info)
      return {
        check: 'port',
        status: 'warn',
        detail: `the daemon runs on ${info.url}; ${host}:${port} (server.port) is in use by another process, so a start without --port would fail`,
        fix: 'set server.port in project.json, or keep starting with `svc serve --port 0`',
      };
    return { check: 'port', status: 'fail', detail: `${host}:${port} is in use by another process`, fix: `stop it, set server.port in project.json, or start with \`svc serve --port 0\`` };
  }
  return { check: 'port', status: 'fail', detail: `cannot listen on ${host}:${port}: ${e.code ?? e.message}`, fix: 'check server.host in project.json' };
}

/**
 * The OS keychain, when the vault key is looked for there: not with SVC_KEYCHAIN=off, nor when the
 * key comes from SVC_VAULT_KEY or the state is shared (its key is never in one machine's keychain).
 */
export async function checkKeychain(vault: { source: string; shared: boolean } | null): Promise<CheckResult> {
  const { env } = io();
  if (env.SVC_KEYCHAIN === 'off') return { check: 'keychain', status: 'ok', detail: 'not used (SVC_KEYCHAIN=off): the vault key is kept in a file' };
  if (vault?.shared) return { check: 'keychain', status: 'ok', detail: 'not used: the state is shared, and its vault key comes from SVC_VAULT_KEY or state.vaultKeyFile' };
  if (vault?.source === 'env') return { check: 'keychain', status: 'ok', detail: 'not used: the vault key comes from SVC_VAULT_KEY' };
  const { osKeychain, KeychainUnavailable } = await import('../../resources/vault/keychain.js');
  try {
    await osKeychain().get('svc-doctor-probe');
    return { check: 'keychain', status: 'ok', detail: 'the OS keychain answers' };
  } catch (e) {
    if (!(e instanceof KeychainUnavailable)) throw e;
    return {
      check: 'keychain',
      status: 'warn',
      detail: `${e.message}; the vault key is kept in a 0600 file instead`,
      fix: 'on Linux, run a Secret Service (gnome-keyring, KeePassXC), or set SVC_KEYCHAIN=off to silence this',
    };
  }
}

/** Where agents run: worktrees of a git repository, or (no repository) the project folder, one run at a time. */
export async function checkWorkspaces(root: string, config: ProjectConfig): Promise<CheckResult> {
  if (!config.runner.enabled) return { check: 'runs', status: 'skip', detail: 'runner.enabled is false: this daemon runs no agents' };
  const { detectRepo } = await import('../../resources/runs/workspace.js');
  const repo = await detectRepo(root);
  if (repo.kind === 'git' && repo.head) return { check: 'runs', status: 'ok', detail: `agents work in git worktrees of ${repo.toplevel} (.svc/worktrees/, branches svc/<agent>/<task>)` };
  return {
    check: 'runs',
    status: 'warn',
    detail:
      repo.kind === 'git'
        ? 'the git repository has no commit yet: agents run in the project folder itself, one at a time'
        : `not a git repository (${repo.reason}): agents run in the project folder itself, one at a time`,
    fix: repo.kind === 'git' ? 'make a first commit' : 'git init && git add -A && git commit -m "first commit" (each task then gets a worktree and a branch)',
  };
}

/** The agent CLIs: as the running daemon finds them on its PATH (its PATH is the one that counts), else as this shell would. */
export async function checkAgentClis(root: string, client: SvcClient | null): Promise<CheckResult> {
  type Found = { kind: string; path: string | null; version: string | null };
  let found: Found[];
  let whose = "the daemon's PATH";
  try {
    if (!client) throw new Error('no daemon');
    found = await client.get<Found[]>('/api/v1/runtimes');
  } catch {
    whose = "this shell's PATH";
    const [{ detectRuntime }, { driverFor }] = await Promise.all([import('../../resources/runs/drivers/detect.js'), import('../../resources/runs/drivers/index.js')]);
    found = await Promise.all((['claude', 'codex'] as const).map((kind) => detectRuntime(driverFor(kind), null, { PATH: (io().env as NodeJS.ProcessEnv).PATH, cwd: root })));
  }
  const here = found.filter((f) => f.path);
  // Not a fault: only an agent whose runtime is claude or codex needs one (and setting it says so).
  if (!here.length)
    return { check: 'agent CLIs', status: 'skip', detail: `neither claude nor codex is on ${whose}: install one to run agents with it, or give a runtime's command as a path (docs/runs.md)` };
  const missing = found.filter((f) => !f.path).map((f) => `${f.kind} not found`);
  return { check: 'agent CLIs', status: 'ok', detail: [...here.map((f) => `${f.kind} ${f.version ?? '(version unknown)'}`), ...missing].join(', ') + ` (${whose})` };
}

export async function runChecks(g: GlobalOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = [checkNode(process.version)];
  const root = projectRoot(g);
  const project = checkProject(root);
  results.push(project.result);
  if (!root || !project.config) {
    for (const check of ['state dir', 'daemon', 'api key', 'port', 'runs', 'agent CLIs', 'data', 'state', 'vault key']) results.push({ check, status: 'skip', detail: 'no valid project.json' });
    results.push(await checkKeychain(null));
    return results;
  }
  const config = project.config;
  results.push(checkStateDir(root));
  const daemon = await checkDaemon(root);
  results.push(daemon.result);
  const key = await checkKey(root, daemon.info, g);
  results.push(key.result);
  results.push(await checkPort(config, daemon.info));
  results.push(await checkWorkspaces(root, config), await checkAgentClis(root, key.client));
  // Loaded only here: the state's modules would slow the start of every other command.
  const { startChecks } = await import('./start-checks.js');
  const shellEnv = io().env as NodeJS.ProcessEnv;
  const setup = key.client ? await daemonSetup(key.client) : null;
  if (setup) {
    // The daemon's own view: the servers and the key it runs with, whatever this shell holds.
    results.push(...setup.checks);
    // And whether a daemon started from this shell (svc restart) would find the same.
    const failing = (await startChecks(root, config, shellEnv)).checks.filter((r) => r.status === 'fail');
    if (failing.length) {
      results.push({
        check: 'restart',
        status: 'warn',
        detail: `from this shell the daemon could not start again, so \`svc restart\` would refuse: ${failing.map((r) => `${r.check}: ${r.detail}`).join('; ')}`,
        fix: 'set what is missing in this shell, or keep the URLs and the vault key in the settings file (project.json envFile; docs/deploy.md)',
      });
    }
    results.push(await checkKeychain(setup.vaultKey));
    return results;
  }
  const local = await startChecks(root, config, shellEnv);
  results.push(...local.checks);
  results.push(await checkKeychain({ source: local.env.SVC_VAULT_KEY ? 'env' : 'keychain', shared: local.shared }));
  return results;
}

const MARK: Record<CheckStatus, () => string> = {
  ok: () => style.green('✓'),
  warn: () => style.yellow('!'),
  fail: () => style.red('✗'),
  skip: () => style.dim('-'),
};

export function formatChecks(results: CheckResult[]): string {
  const width = Math.max(...results.map((r) => r.check.length));
  return results.map((r) => `${MARK[r.status]()} ${r.check.padEnd(width)}  ${r.detail}${r.fix ? `\n  ${' '.repeat(width)}  ${style.dim('fix:')} ${r.fix}` : ''}`).join('\n') + '\n';
}

export function doctorCommand(): Command {
  return new Command('doctor').description('Check the setup (Node, project.json, state dir, daemon, key, port, data provider, vault, keychain) and say how to fix what fails').action(
    localAction(async (g) => {
      const results = await runChecks(g);
      emit(Boolean(g.json), results, () => formatChecks(results));
      if (results.some((r) => r.status === 'fail')) io().exitCode = 1;
    }),
  );
}
