import { serviceKey, type App } from '../../app.js';
import { statePaths } from '../../state-dir.js';
import { VAULT } from '../vault/live.js';
import type { KeySource } from '../vault/master-key.js';
import { countEntries } from '../vault/store.js';
import { checkDataServer, checkState, type CheckResult } from './doctor-state.js';

// What the running daemon runs on, as only it knows: the state and the application databases'
// server it was started with (their URLs came from its own environment or settings file, which
// svc doctor's shell may not have), and the vault key it holds. svc doctor asks for this
// (GET /api/v1/status/setup) instead of looking again from its own shell. URLs are shown masked.

export interface Setup {
  /** The project's settings file read at start, and the variables taken from it (never their values). */
  settingsFile: { path: string; names: string[] } | null;
  /** The URLs in use, passwords included: only ever shown masked. */
  stateUrl: string | null;
  dataUrl: string | null;
  /** The newest state schema version this svc knows. */
  schemaVersion: number;
}

/** What the daemon started with (filled by its resources and data provider parts). */
export const SETUP = serviceKey<Setup>('setup');

export interface SetupReport {
  settingsFile: Setup['settingsFile'];
  vaultKey: { source: KeySource; shared: boolean };
  /** The checks `svc doctor` shows: data, state, vault key, and on a shared state api keys. */
  checks: CheckResult[];
}

const entries = (n: number): string => `${n} ${n === 1 ? 'entry' : 'entries'}`;

/** The vault key this daemon holds: it opened the vault with it at start. */
async function vaultKeyCheck(app: App, setup: Setup): Promise<CheckResult> {
  const vault = app.services.get(VAULT);
  const { source, where } = vault.location;
  const inFile = source === 'env' && setup.settingsFile?.names.includes(where) ? ` in ${setup.settingsFile.path}` : '';
  let opens: string;
  try {
    opens = `opens the vault (${entries(await countEntries(app.db))})`;
  } catch {
    opens = 'opened the vault at start (the state does not answer now)';
  }
  return { check: 'vault key', status: 'ok', detail: `from ${source} (${where}${inFile}); ${opens}` };
}

export async function setupReport(app: App): Promise<SetupReport> {
  const setup = app.services.get(SETUP);
  const config = app.config();
  const checks: CheckResult[] = [setup.dataUrl ? await checkDataServer(setup.dataUrl) : { check: 'data', status: 'ok', detail: 'SQLite files in .svc/data/' }];
  if (setup.stateUrl) {
    // The URL the daemon runs on, whatever project.json says now (it applies at the next start).
    const state = await checkState(app.root, { ...config, state: { ...config.state, provider: 'postgres', url: setup.stateUrl } }, app.env, { vaultKey: false, knownVersion: setup.schemaVersion });
    checks.push(state[0]!, await vaultKeyCheck(app, setup), ...state.slice(1));
  } else {
    checks.push({ check: 'state', status: 'ok', detail: `SQLite file ${statePaths(app.root).db}` }, await vaultKeyCheck(app, setup));
  }
  const vault = app.services.get(VAULT);
  return { settingsFile: setup.settingsFile, vaultKey: { source: vault.location.source, shared: Boolean(vault.shared) }, checks };
}
