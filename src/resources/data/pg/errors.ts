import { AppError } from '../../../kernel/errors.js';
import type { ConstraintInfo } from '../dialect.js';
import type { SchemaDefT } from '../schema.js';
import { TIMESTAMP_HINT } from '../sqlite-errors.js';

// PostgreSQL's errors as the API's, the same answers SQLite's give (sqlite-errors.ts): a
// constraint names its column; nothing of the server (its host, its roles, other schemas) reaches
// a caller. Connection failures are 503 with Retry-After.

interface PgLike {
  code?: unknown;
  message?: unknown;
  detail?: unknown;
  column?: unknown;
  table?: unknown;
  constraint?: unknown;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
export const pgCode = (err: unknown): string => str((err as PgLike | null)?.code);

/** Seconds a caller should wait after a 503 for an unreachable server. */
export const RETRY_AFTER_S = 2;

export const unavailable = (message = 'The PostgreSQL server cannot be reached; retry shortly.'): AppError =>
  new AppError('data_unavailable', message, { headers: { 'Retry-After': String(RETRY_AFTER_S) } });

/** Errors that say the server or the connection is gone, not that the statement is wrong. */
export function isConnectionError(err: unknown): boolean {
  const code = pgCode(err);
  if (/^(08|57P0[1-3]|53300)/.test(code)) return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN'].includes(code)) return true;
  const m = str((err as PgLike | null)?.message);
  return /Connection terminated|connection timeout|Client has encountered a connection error|timeout exceeded when trying to connect/i.test(m);
}

export function pgConstraint(err: unknown): ConstraintInfo | null {
  const e = (err ?? {}) as PgLike;
  const code = pgCode(err);
  if (!code.startsWith('23')) return null;
  const detail = str(e.detail);
  const table = str(e.table) || undefined;
  if (code === '23505') {
    // Key (a, b)=(1, 2) already exists.
    const cols = (/^Key \(([^)]*)\)=/.exec(detail)?.[1] ?? '')
      .split(',')
      .map((s) => s.trim().replace(/^"|"$/g, ''))
      .filter(Boolean);
    return { column: cols[0] ?? null, table, message: `must be unique; another row already has ${cols.length > 1 ? `these values of ${cols.join(', ')}` : 'this value'}` };
  }
  if (code === '23502') return { column: str(e.column) || null, table, message: 'must not be null' };
  if (code === '23514') {
    // Checks are named after their column (dialect.ts).
    return { column: str(e.constraint) || null, table, message: 'is not a valid value of the column type' };
  }
  if (code === '23503') {
    // Key (_id)=(…) is still referenced from table "orders". / Key (customer)=(…) is not present in table "customers".
    const still = /is still referenced from table "([^"]+)"/.exec(detail);
    // The referencing table's own constraint, named <table>_<column>_fkey by Postgres.
    const con = str(e.constraint);
    const col = table && con.startsWith(`${table}_`) && con.endsWith('_fkey') ? con.slice(table.length + 1, -5) : null;
    if (still) return { column: null, table, message: 'a foreign key constraint failed', referencedBy: col ? `${still[1]}.${col}` : still[1] };
    const key = /^Key \(([^)]*)\)=.* is not present in table "([^"]+)"/.exec(detail);
    if (key) return { column: key[1]!.replace(/"/g, ''), table, message: `references ${key[2]}, and no row there has that value` };
    return { column: null, table, message: 'a foreign key constraint failed' };
  }
  return { column: null, table, message: 'a constraint failed' };
}

/** Any error of caller SQL (or of a batch) → an AppError. */
export function pgError(err: unknown, timeoutMs?: number, schema?: SchemaDefT): AppError {
  if (err instanceof AppError) return err;
  const code = pgCode(err);
  const msg = str((err as PgLike | null)?.message);
  const c = pgConstraint(err);
  if (c) {
    // A missing referenced row names the referenced column too, as SQLite's answer does.
    const ref = c.table && c.column && schema && Object.hasOwn(schema.tables, c.table) ? schema.tables[c.table]!.columns[c.column]?.references : undefined;
    if (code === '23503' && ref) c.message = `references ${ref.table}.${ref.column}, and no row there has that value`;
    const message = c.column ? `${c.column}: ${c.message}.` : `${c.message}.`;
    return new AppError('data_constraint', message, c.column ? { details: [{ path: c.column, message: c.message }] } : {});
  }
  if (code === '57014' || code === '25P03') {
    return new AppError('data_unavailable', `The statement ran past data.statementTimeoutMs${timeoutMs ? ` (${timeoutMs} ms)` : ''} and was stopped; nothing it did was kept.`, {
      headers: { 'Retry-After': '1' },
    });
  }
  if (code === '40001' || code === '40P01' || code === '55P03') return new AppError('data_unavailable', 'The database is busy; retry.', { headers: { 'Retry-After': '1' } });
  if (isConnectionError(err)) return unavailable();
  if (code === 'SV413' || code === '54000' || /^53/.test(code))
    return new AppError('data_limit', code === 'SV413' ? 'The result exceeds 1 MiB; select fewer rows or columns (maxRows).' : 'The statement needs more memory or space than a query may use.');
  if (code === '25006')
    return new AppError('data_invalid', 'The statement writes; read mode runs only statements that cannot write (send it with mode "write").', {
      details: [{ path: 'body.sql', message: 'writes in read mode' }],
    });
  if (code === '42501') return new AppError('data_forbidden', `The statement is not permitted: ${sanitize(msg)}.`);
  if (code === '42P01') return new AppError('data_not_found', `${sanitize(msg)} in this database.`);
  if (code === '22007' || code === '22008') return new AppError('data_constraint', `${TIMESTAMP_HINT}: ${sanitize(msg)}.`);
  if (/^(42|22|2F|0A|21)/.test(code)) return new AppError('data_invalid', `SQL error: ${sanitize(msg)}.`);
  return new AppError('data_invalid', 'The statement failed.');
}

/** No schema names of the provider (svc_<id>) in a caller's message. */
const sanitize = (msg: string): string => msg.replace(/"?svc_[0-9a-f]{32}(_m)?"?\./g, '').slice(0, 500);
