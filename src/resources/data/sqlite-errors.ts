import { AppError } from '../../kernel/errors.js';

// SQLite's errors as the API's: a constraint names its column; nothing else of SQLite (error
// codes, file names) reaches a caller.

interface SqliteLike {
  code?: unknown;
  message?: unknown;
}

const sqliteCode = (err: unknown): string => {
  const c = (err as SqliteLike | null)?.code;
  return typeof c === 'string' ? c : '';
};
const sqliteMessage = (err: unknown): string => {
  const m = (err as SqliteLike | null)?.message;
  return typeof m === 'string' ? m : '';
};

/** What a timestamp trigger of ddl.ts raises, followed by `table.column`; read back below. */
export const TIMESTAMP_REFUSAL = 'svc-timestamp';

/** What to write instead, for a timestamp in another spelling than the stored one (ddl.ts's triggers). */
export const TIMESTAMP_HINT = "must be UTC with milliseconds, like 2026-01-31T11:00:00.000Z (in SQL, strftime('%Y-%m-%dT%H:%M:%fZ', x) converts an x that names its zone)";

/** The column a constraint failure is about (and its table, when SQLite says), with a message for people; null if not a constraint failure. */
export function constraintColumn(err: unknown): { column: string | null; table?: string; message: string } | null {
  const code = sqliteCode(err);
  if (!code.startsWith('SQLITE_CONSTRAINT')) return null;
  const msg = sqliteMessage(err);
  // "UNIQUE constraint failed: t.a, t.b" / "NOT NULL constraint failed: t.a" / "CHECK constraint failed: a"
  const m = /constraint failed: (.+)$/.exec(msg);
  const cols = m ? m[1]!.split(',').map((s) => s.trim().split('.').pop()!) : [];
  const dt = /cannot store \w+ value in \w+ column [^.]+\.(\w+)/.exec(msg);
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return { column: cols[0] ?? null, message: `must be unique; another row already has ${cols.length > 1 ? `these values of ${cols.join(', ')}` : 'this value'}` };
  }
  if (code === 'SQLITE_CONSTRAINT_NOTNULL') return { column: cols[0] ?? null, message: 'must not be null' };
  if (code === 'SQLITE_CONSTRAINT_CHECK') return { column: cols[0] ?? null, message: 'is not a valid value of the column type' };
  if (code === 'SQLITE_CONSTRAINT_DATATYPE') return { column: dt?.[1] ?? null, message: 'has the wrong type for the column' };
  if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return { column: null, message: 'a foreign key constraint failed' };
  const ts = new RegExp(`^${TIMESTAMP_REFUSAL} (\\w+)\\.(\\w+)$`).exec(msg);
  if (code === 'SQLITE_CONSTRAINT_TRIGGER' && ts) return { table: ts[1]!, column: ts[2]!, message: TIMESTAMP_HINT };
  if (code === 'SQLITE_CONSTRAINT_TRIGGER') return { column: null, message: msg.replace(/^.*?: /, '') || 'refused' };
  return { column: null, message: 'a constraint failed' };
}

/**
 * Any error of caller SQL → an AppError. Syntax and name errors keep SQLite's own short message
 * (it quotes only the caller's text); the rest get a fixed message.
 */
export function sqlError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const code = sqliteCode(err);
  const msg = sqliteMessage(err);
  const c = constraintColumn(err);
  if (c) {
    const message = c.column ? `${c.table ? `${c.table}.` : ''}${c.column}: ${c.message}.` : `${c.message}.`;
    return new AppError('data_constraint', message, c.column ? { details: [{ path: c.column, message: c.message }] } : {});
  }
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') return new AppError('data_unavailable', 'The database is busy; retry.');
  if (code === 'SQLITE_NOMEM' || code === 'SQLITE_TOOBIG' || code === 'SQLITE_FULL') return new AppError('data_limit', 'The statement needs more memory or space than a query may use.');
  if (code === 'SQLITE_RANGE') return new AppError('data_invalid', `The parameters do not match the statement: ${msg}.`);
  if (code === 'SQLITE_ERROR' || code === 'SQLITE_MISMATCH') {
    if (/^no such table/.test(msg)) return new AppError('data_not_found', `${msg} in this database.`);
    return new AppError('data_invalid', `SQL error: ${sanitize(msg)}.`);
  }
  // Binding errors (too few parameters, a named parameter missing) carry no code, in better-sqlite3
  // and in src/db/node-sqlite.ts alike.
  if (code === '' && (err instanceof RangeError || err instanceof TypeError) && /parameter|bind/i.test(msg)) {
    return new AppError('data_invalid', `The parameters do not match the statement: ${sanitize(msg)}`);
  }
  return new AppError('data_invalid', 'The statement failed.');
}

/** No file paths, ever (they would reveal where the project and other databases live). */
function sanitize(msg: string): string {
  return msg.replace(/(\/[^\s'"]+)+/g, '[path]').slice(0, 500);
}
