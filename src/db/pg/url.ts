// PostgreSQL URLs as the daemon takes them from project.json or the environment: checked once at
// start, and never shown with their password.

/** postgres://user:***@host:port/db: the URL as messages and logs show it. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    u.search = '';
    return u.toString();
  } catch {
    return '(an unparseable URL)';
  }
}

/** Which setting a URL comes from, for the messages that say what to fix. */
export interface UrlSource {
  /** `data.url`, `state.url`. */
  field: string;
  /** `SVC_DATA_URL`, `SVC_STATE_URL`. */
  envName: string;
  /** `data.provider`, `state.provider`. */
  provider: string;
}

/** The URL in use: the configured one, else the environment's; refused with what to fix when absent or not a postgres:// URL. */
export function postgresUrl(configured: string | undefined, env: NodeJS.ProcessEnv, src: UrlSource): string {
  const url = configured || env[src.envName] || '';
  if (!url) throw new Error(`${src.provider} is "postgres" but there is no server URL: set ${src.field} in project.json or ${src.envName} in the environment (postgres://user:password@host:5432/db).`);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`${src.field} (or ${src.envName}) is not a URL: ${maskUrl(url)}; write it as postgres://user:password@host:5432/db.`);
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new Error(`${src.field} must start with postgres:// (not ${u.protocol}//).`);
  return url;
}

/** Why a connection to the server failed, in words that say what to fix (by its error code). */
export function connectFailure(code: string | undefined, message: string): string {
  return code === 'ECONNREFUSED'
    ? 'the connection was refused: is the server running, and on that host and port?'
    : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
      ? 'the host name does not resolve'
      : code === '28P01' || code === '28000'
        ? 'the server refused the login: check the user and password'
        : code === '3D000'
          ? 'the database does not exist: create it, or name another one in the URL'
          : message;
}
