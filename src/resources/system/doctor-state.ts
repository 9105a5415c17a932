import { resolve } from 'node:path';
import { buildKeys, keySetFingerprint } from '../../config/keys.js';
import type { ProjectConfig } from '../../config/schema.js';
import { stateUrl } from '../../config/state.js';
import { maskUrl } from '../../db/pg/url.js';
import { systemClock } from '../../lib/clock.js';
import { PRESENCE_STALE_MS } from './presence.js';

// svc doctor's look at a state on PostgreSQL (the connection, the schema's version, the vault key
// against the one recorded, the API keys of the other daemons present on it) and at the
// application databases' server. Read-only. The running daemon makes the same checks with its
// own environment when svc doctor asks it (setup.ts); svc doctor makes them itself when no daemon
// answers. Free of the CLI's modules, since the daemon loads this file.

export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

export interface CheckResult {
  check: string;
  status: CheckStatus;
  detail: string;
  fix?: string;
}

const daemons = (n: number): string => `${n} ${n === 1 ? 'daemon' : 'daemons'}`;

/**
 * The state's checks. `vaultKey: false` leaves out the vault key's (the daemon reports the key it
 * holds instead of looking for one in its environment again).
 */
export async function checkState(
  root: string,
  config: ProjectConfig,
  env: NodeJS.ProcessEnv,
  opts: { vaultKey?: boolean /** The newest state schema version this svc knows (the composition's: state-schema.ts). */; knownVersion: number },
): Promise<CheckResult[]> {
  let url: string | null;
  try {
    url = stateUrl(config, env);
  } catch (err) {
    return [{ check: 'state', status: 'fail', detail: (err as Error).message, fix: 'set SVC_STATE_URL (or state.url) to postgres://user:password@host:5432/db' }];
  }
  if (!url) return [{ check: 'state', status: 'ok', detail: 'SQLite file .svc/state.sqlite' }];
  // Loaded only here: the driver would slow the start of every other command.
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
  } catch (err) {
    return [{ check: 'state', status: 'fail', detail: `cannot reach PostgreSQL at ${maskUrl(url)}: ${(err as Error).message}`, fix: 'start the server, or fix state.url / SVC_STATE_URL' }];
  }
  try {
    const has = (await c.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS t")).rows[0].t as boolean;
    if (!has) return [{ check: 'state', status: 'ok', detail: `PostgreSQL at ${maskUrl(url)}, empty (the first svc serve makes the schema)` }];
    const version = Number((await c.query('SELECT max(version) AS v FROM schema_migrations')).rows[0].v);
    const known = opts.knownVersion;
    if (version > known) {
      return [
        {
          check: 'state',
          status: 'fail',
          detail: `the state at ${maskUrl(url)} has schema version ${version}, newer than this svc knows (${known})`,
          fix: 'upgrade svc to the version the other daemons run',
        },
      ];
    }
    const results: CheckResult[] = [{ check: 'state', status: 'ok', detail: `PostgreSQL at ${maskUrl(url)}, schema version ${version}` }];
    if (opts.vaultKey !== false) results.push(await sharedVaultKey(c, config, env, root));
    const mine = keySetFingerprint(buildKeys(config, env.SERVICE_API_KEY, undefined));
    const rows = (await c.query('SELECT url, hostname, keys FROM daemons WHERE seen_at > $1', [systemClock.now() - PRESENCE_STALE_MS])).rows as { url: string; hostname: string; keys: string }[];
    const differ = rows.filter((r) => r.keys !== mine);
    results.push(
      differ.length
        ? {
            check: 'api keys',
            status: 'warn',
            detail: `${differ.length} of the ${daemons(rows.length)} on this state accept other API keys than this project.json and SERVICE_API_KEY: ${differ.map((r) => `${r.hostname} (${r.url})`).join(', ')}`,
            fix: 'give every daemon the same apiKeys and SERVICE_API_KEY (docs/deploy.md, "API keys")',
          }
        : {
            check: 'api keys',
            status: 'ok',
            detail:
              rows.length === 1
                ? 'the one daemon on this state accepts the same keys as this project'
                : rows.length
                  ? `the ${daemons(rows.length)} on this state accept the same keys as this project`
                  : 'no daemon on this state right now',
          },
    );
    return results;
  } catch (err) {
    return [{ check: 'state', status: 'fail', detail: `reading the state at ${maskUrl(url)} failed: ${(err as Error).message}` }];
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function sharedVaultKey(c: import('pg').Client, config: ProjectConfig, env: NodeJS.ProcessEnv, root: string): Promise<CheckResult> {
  const [{ locateSharedKey }, { deriveKeys, sameCheck }] = await Promise.all([import('../vault/master-key.js'), import('../vault/crypto.js')]);
  const meta = new Map(((await c.query("SELECT key, value FROM meta WHERE key IN ('projectId', 'vault.keyCheck')")).rows as { key: string; value: string }[]).map((r) => [r.key, r.value]));
  let found;
  try {
    found = await locateSharedKey(env, config.state.vaultKeyFile ? resolve(root, config.state.vaultKeyFile) : null);
  } catch (err) {
    return { check: 'vault key', status: 'fail', detail: (err as Error).message };
  }
  const projectId = meta.get('projectId');
  const recorded = meta.get('vault.keyCheck');
  if (!projectId || !recorded) return { check: 'vault key', status: 'ok', detail: `from ${found.location.where}; none recorded yet` };
  return sameCheck(Buffer.from(recorded, 'hex'), deriveKeys(found.key, projectId).check)
    ? { check: 'vault key', status: 'ok', detail: `from ${found.location.where}; the one the state records` }
    : {
        check: 'vault key',
        status: 'fail',
        detail: `the key from ${found.location.where} is not the one the other daemons use`,
        fix: 'give every daemon the same SVC_VAULT_KEY or state.vaultKeyFile',
      };
}

/** Where application databases live; for PostgreSQL: the connection, the version, the admin's rights (the URL shown masked). */
export async function checkData(config: ProjectConfig, env: NodeJS.ProcessEnv): Promise<CheckResult> {
  if (config.data.provider !== 'postgres') return { check: 'data', status: 'ok', detail: 'SQLite files in .svc/data/' };
  // Loaded only here: the driver would slow the start of every other command.
  const { dataUrl } = await import('../data/pg/connect.js');
  let url: string;
  try {
    url = dataUrl(config.data.url, env);
  } catch (err) {
    return { check: 'data', status: 'fail', detail: (err as Error).message, fix: 'set SVC_DATA_URL (in the environment or the envFile) or data.url to postgres://user:password@host:5432/db' };
  }
  return checkDataServer(url);
}

/** The application databases' PostgreSQL server at `url`: reachable, recent enough, the admin's rights. */
export async function checkDataServer(url: string): Promise<CheckResult> {
  const { checkServer } = await import('../data/pg/connect.js');
  try {
    const s = await checkServer(url, 5_000);
    return { check: 'data', status: 'ok', detail: `PostgreSQL ${Math.floor(s.version / 10000)} at ${maskUrl(url)}: role ${s.user} may create roles and schemas in ${s.database}` };
  } catch (err) {
    return { check: 'data', status: 'fail', detail: (err as Error).message, fix: 'see docs/data.md, "PostgreSQL provider"' };
  }
}
