import pg from 'pg';
import { connectFailure, maskUrl, postgresUrl } from '../../../db/pg/url.js';
import { pgCode } from './errors.js';

// Connections to the server: the URL (never logged or returned: masked), how values are read
// (types), and the start-up check that says what to fix when the server cannot be used.

export { maskUrl };

/** The URL the daemon uses: data.url, else $SVC_DATA_URL. */
export const dataUrl = (configured: string | undefined, env: NodeJS.ProcessEnv): string => postgresUrl(configured, env, { field: 'data.url', envName: 'SVC_DATA_URL', provider: 'data.provider' });

const int8 = (s: string): number | string => {
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : s;
};

/**
 * numeric → a JSON number when the number reads back as the same decimal (1.5, 2.50 → 2.5, an
 * average), else its exact decimal text (more than ~15 significant digits, NaN, Infinity).
 */
export const numeric = (s: string): number | string => {
  const n = Number(s);
  if (!Number.isFinite(n) || !/^-?\d+(\.\d+)?$/.test(s)) return s;
  const canon = s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
  return String(n) === canon.replace(/^(-?)0+(?=\d)/, '$1') ? n : s;
};

const PARSERS: Record<number, (s: string) => unknown> = {
  20: int8, // bigint: a number when it is a safe integer, else its decimal text
  1700: numeric,
  1082: (s) => s, // date: as the server wrote it, never shifted by the daemon's time zone
  1114: (s) => s, // timestamp without time zone
  1186: (s) => s, // interval
};

/** How the daemon reads values from every connection. */
export const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => PARSERS[oid] ?? pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** What an admin connection's start-up check found. */
export interface ServerInfo {
  version: number;
  user: string;
  database: string;
}

/**
 * Connects once with the admin URL and says what to fix when it cannot be used: the server is
 * down, the login is refused, the database is missing, the version is older than 13, the role may
 * not create roles or schemas.
 */
export async function checkServer(url: string, timeoutMs: number): Promise<ServerInfo> {
  const where = maskUrl(url);
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, types: TYPES });
  c.on('error', () => undefined);
  try {
    await c.connect();
  } catch (err) {
    throw new Error(`Cannot use PostgreSQL at ${where}: ${connectFailure(pgCode(err), (err as Error).message)}. Fix data.url in project.json (or SVC_DATA_URL), or set data.provider to "sqlite".`);
  }
  try {
    const r = await c.query<{ v: number; u: string; d: string; su: boolean; cr: boolean; cdb: boolean; gc: boolean; pc: boolean }>(
      `SELECT current_setting('server_version_num')::int AS v, current_user AS u, current_database() AS d, r.rolsuper AS su, r.rolcreaterole AS cr,
              has_database_privilege(current_database(), 'CREATE') AS cdb, has_database_privilege(current_database(), 'CONNECT WITH GRANT OPTION') AS gc,
              has_database_privilege('public', current_database(), 'CONNECT') AS pc
       FROM pg_roles r WHERE r.rolname = current_user`,
    );
    const row = r.rows[0]!;
    if (row.v < 130000) throw new Error(`PostgreSQL at ${where} is version ${Math.floor(row.v / 10000)}; svc needs PostgreSQL 13 or newer.`);
    if (!row.su && !row.cr)
      throw new Error(`The role ${row.u} of data.url may not create roles (CREATEROLE): each application database has a login role of its own. See docs/data.md, "The admin role".`);
    if (!row.cdb) throw new Error(`The role ${row.u} of data.url may not create schemas in database ${row.d} (GRANT CREATE ON DATABASE). See docs/data.md, "The admin role".`);
    // Each database's roles log in by a CONNECT the admin grants them, or else PUBLIC's.
    if (!row.gc && !row.pc)
      throw new Error(
        `The role ${row.u} of data.url may not grant CONNECT on database ${row.d}, and PUBLIC has no CONNECT there: the application databases' roles could not log in. Make ${row.u} the database's owner (ALTER DATABASE ${row.d} OWNER TO ${row.u}). See docs/data.md, "The admin role".`,
      );
    return { version: row.v, user: row.u, database: row.d };
  } finally {
    await c.end().catch(() => undefined);
  }
}
