import { existsSync } from 'node:fs';
import { projectEnv } from '../../config/env-file.js';
import { formatIssues, loadConfig } from '../../config/load.js';
import type { ProjectConfig } from '../../config/schema.js';
import { stateUrl } from '../../config/state.js';
import { exposureIssues } from '../../kernel/exposure.js';
import { statePaths } from '../../state-dir.js';
import type { CheckResult } from '../../resources/system/doctor-state.js';

// What a daemon started from this shell would find: the project's settings file, the application
// databases' server, the state and the vault key, checked the way the daemon checks them at start.
// `svc restart` runs them before it stops anything (a daemon it could not start again is never
// stopped); `svc doctor` shows them when no daemon answers, and says which would fail when one does.
// Read-only: no key or database is created.

/** The environment a daemon started here would have (this one and the settings file), and the file's check. */
export function settingsCheck(root: string, config: ProjectConfig, env: NodeJS.ProcessEnv): { env: NodeJS.ProcessEnv; result: CheckResult | null } {
  try {
    const p = projectEnv(root, config, env);
    if (!p.file) return { env, result: null };
    const sets = p.names.length ? `gives ${p.names.join(', ')}` : 'gives nothing the environment does not already set';
    return { env: p.env, result: { check: 'settings', status: 'ok', detail: `${p.file} ${sets}` } };
  } catch (err) {
    return { env, result: { check: 'settings', status: 'fail', detail: (err as Error).message, fix: 'see docs/deploy.md, "The settings file"' } };
  }
}

export interface StartChecks {
  /** In svc doctor's order: settings (when there is a file), data, state, vault key, api keys (shared state). */
  checks: CheckResult[];
  /** The environment the daemon would have. */
  env: NodeJS.ProcessEnv;
  /** Its state would be on PostgreSQL (shared), whether or not a URL is set. */
  shared: boolean;
}

export async function startChecks(root: string, config: ProjectConfig, shellEnv: NodeJS.ProcessEnv): Promise<StartChecks> {
  const settings = settingsCheck(root, config, shellEnv);
  const env = settings.env;
  const out: CheckResult[] = settings.result ? [settings.result] : [];
  // The daemon refuses a short one: as guessable as a short key in project.json.
  if (env.SERVICE_API_KEY && env.SERVICE_API_KEY.length < 16)
    out.push({ check: 'SERVICE_API_KEY', status: 'fail', detail: 'SERVICE_API_KEY is shorter than 16 characters, so the daemon would refuse to start', fix: 'set a longer key, or unset it' });
  // Loaded only here: the state's modules and the driver would slow the start of every other command.
  const { checkData, checkState } = await import('../../resources/system/doctor-state.js');
  out.push(await checkData(config, env));
  const { latestSchemaVersion } = await import('../../state-schema.js');
  const state = await checkState(root, config, env, { knownVersion: latestSchemaVersion() });
  out.push(...state);
  let shared = true;
  try {
    shared = stateUrl(config, env) !== null;
  } catch {
    // A PostgreSQL state without a URL: checkState said so.
  }
  // A shared state's vault key is checked against that state (checkState), not the local file.
  if (!shared) out.push(await checkVault(root, env));
  return { checks: out, env, shared };
}

/**
 * Where the vault's master key comes from and whether it opens the vault's entries: the same
 * search the daemon makes at start, then the key checked against the one the entries were sealed
 * under. Reads the database read-only; creates no key.
 */
export async function checkVault(root: string, env: NodeJS.ProcessEnv): Promise<CheckResult> {
  const paths = statePaths(root);
  if (!existsSync(paths.db)) return { check: 'vault key', status: 'ok', detail: 'no database yet (the first `svc serve` creates the key)' };
  const { default: Database } = await import('../../db/sqlite.js');
  const db = new Database(paths.db, { readonly: true, fileMustExist: true });
  try {
    const projectId = (db.prepare("SELECT value FROM meta WHERE key = 'projectId'").get() as { value: string } | undefined)?.value;
    if (!projectId) return { check: 'vault key', status: 'ok', detail: 'the database has no project id yet' };
    const [{ locateMasterKey }, { osKeychain }, store, { deriveKeys, sameCheck }] = await Promise.all([
      import('../../resources/vault/master-key.js'),
      import('../../resources/vault/keychain.js'),
      import('../../resources/vault/store.js'),
      import('../../resources/vault/crypto.js'),
    ]);
    const found = await locateMasterKey(env, projectId, osKeychain());
    const count = await store.countEntries(db as never);
    const where = `${found.location.source} (${found.location.where})`;
    if (!found.key) {
      return count
        ? { check: 'vault key', status: 'fail', detail: `no key in ${where}, but ${count} entries are sealed under one`, fix: 'restore the key there, or set SVC_VAULT_KEY to it' }
        : { check: 'vault key', status: 'ok', detail: `none yet; the next start creates one in ${where}` };
    }
    const recorded = await store.getKeyCheck(db as never);
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

/**
 * What would stop a daemon started from this shell, on `host` (svc restart's --host, else the
 * running one's): an invalid project.json, a host the exposure rules refuse, and the start checks
 * that fail. Empty when it would start.
 */
export async function startProblems(root: string, host: string | undefined, env: NodeJS.ProcessEnv): Promise<CheckResult[]> {
  const loaded = loadConfig(root);
  if (!loaded.ok) return [{ check: 'project', status: 'fail', detail: `project.json is invalid: ${formatIssues(loaded.issues)}` }];
  const exposure = exposureIssues(host ?? loaded.config.server.host, loaded.config.server);
  if (exposure.length) return [{ check: 'server.host', status: 'fail', detail: exposure.map((i) => i.message).join('; ') }];
  return (await startChecks(root, loaded.config, env)).checks.filter((r) => r.status === 'fail');
}
