import { postgresUrl } from '../db/pg/url.js';
import type { ProjectConfig } from './schema.js';

/**
 * The PostgreSQL URL of the daemon's state, or null for the SQLite file. state.provider decides;
 * left unset, $SVC_STATE_URL being set means postgres.
 */
export function stateUrl(config: ProjectConfig, env: NodeJS.ProcessEnv): string | null {
  const provider = config.state.provider ?? (env.SVC_STATE_URL ? 'postgres' : 'sqlite');
  if (provider === 'sqlite') return null;
  return postgresUrl(config.state.url, env, { field: 'state.url', envName: 'SVC_STATE_URL', provider: 'state.provider' });
}
