import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { q } from '../dialect.js';
import type { SchemaDefT } from '../schema.js';
import { SYSTEM_COLUMNS } from '../schema.js';

// What one application database is on the server: a schema for its tables (svc_<id>), a schema for
// what only the daemon touches (svc_<id>_m: its schema record, migrations, idempotency records), and
// two login roles. svc_<id> has USAGE on both schemas, table privileges on its tables only, and no
// privilege on the _m tables (it reaches the idempotency records only through two SECURITY DEFINER
// functions that want the database's secret). svc_<id>_r, the reader, has SELECT on the tables and
// EXECUTE on the one _m function that bounds a result (over_limit), nothing else: read-mode /query
// runs on its connections as a single statement, without BEGIN READ ONLY, and its privileges, not the
// connection's settings, are what keep it from writing. Both schemas are owned by the admin role,
// which neither role can become (NOINHERIT, no membership).

export interface PgNames {
  /** The role, and the schema of the tables (quoted by q() where used). */
  role: string;
  /** The read-only role (SELECT on the tables, nothing else). */
  reader: string;
  schema: string;
  meta: string;
}

export const namesOf = (id: string): PgNames => {
  const hex = id.replace(/-/g, '').toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) throw new Error(`not a database id: ${id}`);
  return { role: `svc_${hex}`, reader: `svc_${hex}_r`, schema: `svc_${hex}`, meta: `svc_${hex}_m` };
};

/**
 * A role's password as a SCRAM-SHA-256 verifier, so that the password itself is never sent to the
 * server (nor written into its log by ALTER ROLE). The password lives only in the daemon's memory:
 * a new one is set each time the daemon opens the database's pool.
 */
export function scramVerifier(password: string, iterations = 4096): string {
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

export const randomSecret = (): string => randomBytes(24).toString('base64url');

/** A SQL string literal (only for values the daemon made: verifiers, names). */
export const lit = (s: string): string => `'${s.replace(/'/g, "''")}'`;

export const IDEMPOTENCY_CONFLICT = 'SV409';
export const RESULT_LIMIT = 'SV413';

/** The daemon's own tables and functions of a database, in its _m schema. */
export function metaSql(n: PgNames, resultBytes: number): string[] {
  const m = q(n.meta);
  const r = q(n.role);
  const fn = (sig: string, body: string, definer: boolean) => `CREATE FUNCTION ${m}.${sig} LANGUAGE plpgsql ${definer ? 'SECURITY DEFINER ' : ''}SET search_path = ${m}, pg_catalog AS $f$ ${body} $f$`;
  const checkSecret = `IF NOT EXISTS (SELECT 1 FROM _svc_secret WHERE digest = sha256(convert_to(secret, 'UTF8'))) THEN RAISE EXCEPTION 'not permitted' USING ERRCODE = '42501'; END IF;`;
  return [
    `CREATE TABLE ${m}._svc_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
    `CREATE TABLE ${m}._svc_migrations (id TEXT PRIMARY KEY, checksum TEXT NOT NULL, schema_version INTEGER NOT NULL, applied_at TEXT NOT NULL, answer TEXT NOT NULL)`,
    `CREATE TABLE ${m}._svc_idempotency (owner TEXT NOT NULL, key TEXT NOT NULL, request_hash TEXT NOT NULL, answer TEXT NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (owner, key))`,
    `CREATE INDEX ON ${m}._svc_idempotency (created_at)`,
    `CREATE TABLE ${m}._svc_secret (digest BYTEA NOT NULL)`,
    // The stored answer of (owner, key), null when there is none; 409 when the key was used with
    // another request. The lock orders two requests with one key: the second sees the first's answer.
    fn(
      'idem_take(secret text, o text, k text, h text, oldest bigint) RETURNS text',
      `DECLARE a text; rh text; BEGIN ${checkSecret}
       PERFORM pg_advisory_xact_lock(hashtextextended(o || chr(1) || k, 0));
       SELECT request_hash, answer INTO rh, a FROM _svc_idempotency WHERE owner = o AND key = k AND created_at >= oldest;
       IF rh IS NOT NULL AND rh <> h THEN RAISE EXCEPTION 'idempotency key reused' USING ERRCODE = '${IDEMPOTENCY_CONFLICT}'; END IF;
       RETURN a; END`,
      true,
    ),
    fn(
      'idem_put(secret text, o text, k text, h text, a text, at bigint, oldest bigint) RETURNS void',
      `BEGIN ${checkSecret}
       DELETE FROM _svc_idempotency WHERE created_at < oldest;
       INSERT INTO _svc_idempotency VALUES (o, k, h, a, at) ON CONFLICT (owner, key) DO UPDATE SET request_hash = excluded.request_hash, answer = excluded.answer, created_at = excluded.created_at; END`,
      true,
    ),
    // Raised inside a caller's statement as soon as its rows pass the result limit (query.ts).
    // Adds one row's size to the statement's running total (a setting local to the transaction:
    // every caller statement is one) and raises past the bound.
    fn(
      'over_limit(b bigint) RETURNS boolean',
      `DECLARE total bigint := coalesce(nullif(current_setting('svc.result_bytes', true), ''), '0')::bigint + coalesce(b, 0);
       BEGIN IF total > ${resultBytes} THEN RAISE EXCEPTION 'result too large' USING ERRCODE = '${RESULT_LIMIT}'; END IF;
       PERFORM set_config('svc.result_bytes', total::text, true); RETURN true; END`,
      false,
    ),
    `REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ${m} FROM PUBLIC`,
    `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${m} TO ${r}`,
    `GRANT EXECUTE ON FUNCTION ${m}.over_limit(bigint) TO ${q(n.reader)}`,
  ];
}

/** The roles' privileges on the tables of `schema`, given again after every migration. */
export function grantSql(n: PgNames, schema: SchemaDefT): string[] {
  const s = q(n.schema);
  const r = q(n.role);
  const rd = q(n.reader);
  const out = [`REVOKE ALL ON ALL TABLES IN SCHEMA ${s} FROM ${r}, ${rd}`, `GRANT USAGE ON SEQUENCE ${s}._svc_seq TO ${r}`];
  for (const [t, def] of Object.entries(schema.tables)) {
    const cols = Object.keys(def.columns)
      .filter((c) => !(SYSTEM_COLUMNS as readonly string[]).includes(c))
      .map(q)
      .join(', ');
    out.push(`GRANT SELECT, DELETE ON ${s}.${q(t)} TO ${r}`, `GRANT INSERT (${cols}), UPDATE (${cols}) ON ${s}.${q(t)} TO ${r}`, `GRANT SELECT ON ${s}.${q(t)} TO ${rd}`);
  }
  return out;
}

const loginRole = (role: string, connectionLimit: number): string =>
  `CREATE ROLE ${q(role)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS CONNECTION LIMIT ${connectionLimit} PASSWORD NULL`;

/**
 * The reader role of a database made before it existed (the daemon adds it when it opens the
 * database): the role, USAGE on both schemas, EXECUTE on over_limit. Its table grants are grantSql's.
 */
export function readerSql(n: PgNames, connectionLimit: number): string[] {
  return [loginRole(n.reader, connectionLimit), `GRANT USAGE ON SCHEMA ${q(n.schema)}, ${q(n.meta)} TO ${q(n.reader)}`, `GRANT EXECUTE ON FUNCTION ${q(n.meta)}.over_limit(bigint) TO ${q(n.reader)}`];
}

/** The two roles and the two schemas; a role logs in only once the daemon has set a password. */
export function createSql(n: PgNames, connectionLimit: number): string[] {
  const r = q(n.role);
  return [
    loginRole(n.role, connectionLimit),
    loginRole(n.reader, connectionLimit),
    `CREATE SCHEMA ${q(n.schema)}`,
    `CREATE SCHEMA ${q(n.meta)}`,
    `REVOKE ALL ON SCHEMA ${q(n.schema)}, ${q(n.meta)} FROM PUBLIC`,
    `GRANT USAGE ON SCHEMA ${q(n.schema)}, ${q(n.meta)} TO ${r}, ${q(n.reader)}`,
  ];
}

/**
 * The functions of pg_catalog no application role needs and that reach past its schema: large
 * objects (one store for the whole database, which any role may fill and whose objects outlive its
 * schema) and session-level advisory locks (held after the transaction ends, in the keyspace the
 * state's own locks use). The transaction-level ones stay: they end with the statement's
 * transaction. As a condition on pg_proc `p`.
 */
export const UNSHARED_FUNCTIONS =
  "p.pronamespace = 'pg_catalog'::regnamespace AND (p.proname LIKE 'lo\\_%' OR p.proname IN ('loread', 'lowrite', 'pg_advisory_unlock_all') OR p.proname ~ '^pg_(try_)?advisory_(lock|unlock)(_shared)?$')";
