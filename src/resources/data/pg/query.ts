import { createHash } from 'node:crypto';
import type { PoolClient } from 'pg';
import { AppError } from '../../../kernel/errors.js';
import { q } from '../dialect.js';
import { LIMITS, type ColumnType, type QueryResult } from '../schema.js';
import { pgDecode } from './dialect.js';

// Caller SQL under the Postgres provider, once admitted (subset.ts) and inside the role's
// transaction (backend.ts). The result is bounded on the server, before its rows reach the daemon:
// the statement runs as a CTE, and each row's size (pg_column_size) goes through a function in the
// database's _m schema that keeps the running total in a transaction-local setting and raises SV413
// as soon as it passes the bound, so a 300 MB string_agg fails on the server and never crosses the wire. A read reads
// at most maxRows + 1 rows of the statement (the +1 says `truncated`); a write runs to its end
// (its rowCount counts every row it returned, as on SQLite).

/** Column types of table columns, by (table oid, attribute number), as RowDescription names them. */
export type ColumnTypes = Map<string, ColumnType>;

const trimmed = (sql: string): string => sql.replace(/[\s;]+$/, '');

/** A prepared statement's name: its text's digest (a name is at most 63 bytes). */
const statementName = (text: string): string => `svc_${createHash('sha256').update(text).digest('base64url').slice(0, 40)}`;

export async function runQuery(c: PoolClient, meta: string, sql: string, params: unknown[], maxRows: number, mode: 'read' | 'write', returning: boolean, types: ColumnTypes): Promise<QueryResult> {
  if (mode === 'write' && !returning) {
    const r = await c.query({ text: sql, values: params });
    return { rows: [], rowCount: r.rowCount ?? 0, truncated: false };
  }
  // Each row's size goes through over_limit() before the row leaves the server: it adds it to the
  // statement's running total and raises past the limit. (Window functions did this before; with a
  // 300 MB row they spilled it to disk several times, 18 s instead of 4.) A read reads maxRows + 1
  // rows, the last only to say `truncated`; a write runs to its end and counts every row it returned.
  const bound = `WHERE ${q(meta)}.over_limit(pg_column_size("_svc_r".*))`;
  const text =
    mode === 'read'
      ? `WITH "_svc_q" AS (${trimmed(sql)}\n) SELECT "_svc_r".* FROM (SELECT * FROM "_svc_q" LIMIT ${maxRows + 1}) AS "_svc_r" ${bound}`
      : `WITH "_svc_q" AS (${trimmed(sql)}\n) SELECT (SELECT count(*) FROM "_svc_q") AS "_svc_n", "_svc_r".* FROM (SELECT * FROM "_svc_q" LIMIT ${maxRows}) AS "_svc_r" ${bound}`;
  const skip = mode === 'read' ? 0 : 1;
  // Named, so the server parses and plans the wrapped statement once per connection, not per call
  // (backend.ts replaces a connection after a bounded number of uses, and what it prepared with it).
  const r = await c.query({ name: statementName(text), text, values: params, rowMode: 'array' });
  const fields = r.fields.slice(skip);
  const colTypes = fields.map((f) => types.get(`${f.tableID}:${f.columnID}`));
  const names = fields.map((f) => f.name);
  const raws = r.rows as unknown[][];
  const rows: Record<string, unknown>[] = [];
  let bytes = 0;
  for (const raw of raws.slice(0, maxRows)) {
    const row: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    for (let i = 0; i < names.length; i++) row[names[i]!] = pgDecode(colTypes[i], raw[i + skip]);
    bytes += JSON.stringify(row).length;
    if (bytes > LIMITS.resultBytes) throw new AppError('data_limit', `The result exceeds ${LIMITS.resultBytes / 1048576} MiB; select fewer rows or columns (maxRows).`);
    rows.push(row);
  }
  if (mode === 'read') return { rows, rowCount: rows.length, truncated: raws.length > maxRows };
  const total = raws.length ? Number(raws[0]![0]) : 0;
  return { rows, rowCount: total, truncated: total > maxRows };
}
