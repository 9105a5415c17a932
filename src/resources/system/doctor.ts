import { Command } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { localAction } from '../../cli/action.js';
import { isLoopbackUrl, projectRoot, type GlobalOptions } from '../../cli/context.js';
import { io } from '../../cli/io.js';
import { emit, style } from '../../cli/output.js';
import { ApiError, SvcClient } from '../../client/client.js';
import { CONFIG_FILE, formatIssues, loadConfig } from '../../config/load.js';
import type { ProjectConfig } from '../../config/schema.js';
import { daemonCa, readDaemonInfo, readLocalKey, runningDaemon, statePaths, type DaemonInfo } from '../../state-dir.js';

// `svc doctor`: what could stop svc from working here, one line per check, with the fix for each
// that fails. It reads the project's files and asks the daemon; it changes nothing.

export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

export interface CheckResult {
  check: string;
  status: CheckStatus;
  detail: string;
  fix?: string;
}

/** The oldest minor of each supported line, as package.json's engines says: require(esm), which CommonJS consumers of the package need, came in 20.19 and 22.12. */
const MIN_MINOR: Record<number, number> = { 20: 19, 22: 12, 24: 0 };
/** The newest line CI runs svc on (.ci/run): a newer one may work, but nothing says so yet. */
const NEWEST_TESTED = 24;

export function checkNode(version: string): CheckResult {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  if (major > NEWEST_TESTED) return { check: 'node', status: 'warn', detail: `Node ${version} is newer than svc has been tested on (20, 22 and 24)`, fix: 'if something fails, use Node 24' };
  const ok = Object.hasOwn(MIN_MINOR, major) && minor >= MIN_MINOR[major]!;
  return ok
    ? { check: 'node', status: 'ok', detail: `Node ${version}` }
    : { check: 'node', status: 'fail', detail: `Node ${version} is not supported`, fix: 'install Node 24, 22.12+ or 20.19+' };
}

export function checkProject(root: string | null): { result: CheckResult; config: ProjectConfig | null } {
  if (!root) {
    return { result: { check: 'project', status: 'fail', detail: `no ${CONFIG_FILE} here or in any parent directory`, fix: 'run `svc init`, or pass --project DIR' }, config: null };
  }
  const loaded = loadConfig(root);
  if (!loaded.ok) {
    return { result: { check: 'project', status: 'fail', detail: `${root}/${CONFIG_FILE} is invalid: ${formatIssues(loaded.issues)}`, fix: `correct ${CONFIG_FILE} (see docs/configuration.md)` }, config: null };
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
      result: { check: 'daemon', status: 'fail', detail: `pid ${info.pid} does not answer on ${info.url}: ${(e as Error).message}`, fix: `see \`svc logs\`; restart it with \`svc restart\` (or \`kill ${info.pid}\`)` },
      info,
    };
  }
}

export async function checkKey(root: string, info: DaemonInfo | null, g: GlobalOptions): Promise<CheckResult> {
  if (!info) return { check: 'api key', status: 'skip', detail: 'no daemon to try it on' };
  const { env } = io();
  const url = g.url || env.SVC_URL || info.url;
  const fromFlag = g.apiKey ? '--api-key' : env.SERVICE_API_KEY ? 'SERVICE_API_KEY' : null;
  const key = g.apiKey || env.SERVICE_API_KEY || (isLoopbackUrl(url) ? readLocalKey(root) : undefined);
  const source = fromFlag ?? '.svc/local.key';
  if (!key) return { check: 'api key', status: 'fail', detail: 'no key: none given and no .svc/local.key', fix: 'restart the daemon (`svc restart`) to create .svc/local.key, or set SERVICE_API_KEY' };
  try {
    await new SvcClient({ url, apiKey: key, timeoutMs: 2000, ca: url === info.url ? daemonCa(info) : undefined }).get('/api/v1/status');
    return { check: 'api key', status: 'ok', detail: `the key from ${source} is accepted` };
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      const fix = fromFlag ? `${fromFlag} is not a key of this project: unset it to use .svc/local.key, or add it to project.json apiKeys` : 'restart the daemon (`svc restart`): its key is not the one in .svc/local.key';
      return { check: 'api key', status: 'fail', detail: `the key from ${source} is refused (401)`, fix };
    }
    return { check: 'api key', status: 'fail', detail: `the daemon did not answer: ${(e as Error).message}`, fix: 'see `svc logs`' };
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
    if (info) return { check: 'port', status: 'warn', detail: `the daemon runs on ${info.url}; ${host}:${port} (server.port) is in use by another process, so a start without --port would fail`, fix: 'set server.port in project.json, or keep starting with `svc serve --port 0`' };
    return { check: 'port', status: 'fail', detail: `${host}:${port} is in use by another process`, fix: `stop it, set server.port in project.json, or start with \`svc serve --port 0\`` };
  }
  return { check: 'port', status: 'fail', detail: `cannot listen on ${host}:${port}: ${e.code ?? e.message}`, fix: 'check server.host in project.json' };
}

/**
 * Where the vault's master key comes from and whether it opens the vault's entries: the same
 * search the daemon makes at start, then the key checked against the one the entries were sealed
 * under. Reads the database read-only; creates no key.
 */
export async function checkVault(root: string): Promise<CheckResult> {
  const paths = statePaths(root);
  if (!existsSync(paths.db)) return { check: 'vault key', status: 'ok', detail: 'no database yet (the first `svc serve` creates the key)' };
  const { env } = io();
  const { default: Database } = await import('../../db/sqlite.js');
  const db = new Database(paths.db, { readonly: true, fileMustExist: true });
  try {
    const projectId = (db.prepare("SELECT value FROM meta WHERE key = 'projectId'").get() as { value: string } | undefined)?.value;
    if (!projectId) return { check: 'vault key', status: 'ok', detail: 'the database has no project id yet' };
    const [{ locateMasterKey }, { osKeychain }, store, { deriveKeys, sameCheck }] = await Promise.all([
      import('../vault/master-key.js'),
      import('../vault/keychain.js'),
      import('../vault/store.js'),
      import('../vault/crypto.js'),
    ]);
    const found = await locateMasterKey(env as NodeJS.ProcessEnv, projectId, osKeychain());
    const count = store.countEntries(db as never);
    const where = `${found.location.source} (${found.location.where})`;
    if (!found.key) {
      return count
        ? { check: 'vault key', status: 'fail', detail: `no key in ${where}, but ${count} entries are sealed under one`, fix: 'restore the key there, or set SVC_VAULT_KEY to it' }
        : { check: 'vault key', status: 'ok', detail: `none yet; the next start creates one in ${where}` };
    }
    const recorded = store.getKeyCheck(db as never);
    if (recorded && !sameCheck(recorded, deriveKeys(found.key, projectId).check)) {
      return count
        ? { check: 'vault key', status: 'fail', detail: `the key from ${where} does not open the ${count} vault entries`, fix: 'restore the key they were sealed with, or set SVC_VAULT_KEY to it' }
        : { check: 'vault key', status: 'warn', detail: `the key from ${where} differs from the recorded one; the vault is empty, so the next start records it` };
    }
    return { check: 'vault key', status: 'ok', detail: `from ${where}; opens the vault (${count} ${count === 1 ? 'entry' : 'entries'})` };
  } catch (e) {
    return { check: 'vault key', status: 'fail', detail: (e as Error).message, fix: 'see docs/vault.md' };
  } finally {
    db.close();
  }
}

export async function checkKeychain(): Promise<CheckResult> {
  const { env } = io();
  if (env.SVC_KEYCHAIN === 'off') return { check: 'keychain', status: 'ok', detail: 'not used (SVC_KEYCHAIN=off): the vault key is kept in a file' };
  const { osKeychain, KeychainUnavailable } = await import('../vault/keychain.js');
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

/** Where application databases live; for PostgreSQL: the connection, the version, the admin's rights (the URL shown masked). */
export async function checkData(config: ProjectConfig, env: NodeJS.ProcessEnv = io().env as NodeJS.ProcessEnv): Promise<CheckResult> {
  if (config.data.provider !== 'postgres') return { check: 'data', status: 'ok', detail: 'SQLite files in .svc/data/' };
  // Loaded only here: the driver would slow the start of every other command.
  const { checkServer, dataUrl, maskUrl } = await import('../data/pg/connect.js');
  let url: string;
  try {
    url = dataUrl(config.data.url, env);
  } catch (err) {
    return { check: 'data', status: 'fail', detail: (err as Error).message, fix: 'set SVC_DATA_URL (or data.url) to postgres://user:password@host:5432/db' };
  }
  try {
    const s = await checkServer(url, 5_000);
    return { check: 'data', status: 'ok', detail: `PostgreSQL ${Math.floor(s.version / 10000)} at ${maskUrl(url)}: role ${s.user} may create roles and schemas in ${s.database}` };
  } catch (err) {
    return { check: 'data', status: 'fail', detail: (err as Error).message, fix: 'see docs/data.md, "PostgreSQL provider"' };
  }
}

export async function runChecks(g: GlobalOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = [checkNode(process.version)];
  const root = projectRoot(g);
  const project = checkProject(root);
  results.push(project.result);
  if (!root || !project.config) {
    for (const check of ['state dir', 'daemon', 'api key', 'port', 'data', 'state', 'vault key']) results.push({ check, status: 'skip', detail: 'no valid project.json' });
    results.push(await checkKeychain());
    return results;
  }
  results.push(checkStateDir(root));
  const daemon = await checkDaemon(root);
  results.push(daemon.result);
  results.push(await checkKey(root, daemon.info, g));
  results.push(await checkPort(project.config, daemon.info));
  results.push(await checkData(project.config));
  // Loaded only here: the state's modules would slow the start of every other command.
  const { checkState } = await import('./doctor-state.js');
  const state = await checkState(root, project.config, io().env as NodeJS.ProcessEnv);
  results.push(...state);
  // A shared state's vault key is checked against that state (checkState), not the local file.
  if (!state.some((r) => r.check === 'vault key')) results.push(await checkVault(root));
  results.push(await checkKeychain());
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
