import { createHash } from 'node:crypto';
import type { PoolClient } from 'pg';
import { AppError } from '../../../kernel/errors.js';
import { q } from '../dialect.js';
import { LIMITS, type ColumnType, type QueryResult } from '../schema.js';
import { pgDecode } from './dialect.js';

// Caller SQL under the Postgres provider, once admitted (subset.ts) and inside the role's
// transaction (backend.ts). The result is bounded on the server, before its rows reach the daemon:
// the statement runs as a CTE, and the rows that come back carry a running sum of their sizes
// (pg_column_size); a function in the database's _m schema raises SV413 as soon as the rows kept
// pass 1 MiB, so a 300 MB string_agg fails on the server and never crosses the wire. A read reads
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
  const src = mode === 'read' ? `(SELECT * FROM "_svc_q" LIMIT ${maxRows + 1}) AS "_svc_q"` : '"_svc_q"';
  const text =
    `WITH "_svc_q" AS (${trimmed(sql)}\n) SELECT "_svc_s".* FROM (` +
    `SELECT count(*) OVER () AS "_svc_n", row_number() OVER w AS "_svc_i", sum(pg_column_size("_svc_q".*)) OVER w AS "_svc_b", "_svc_q".* FROM ${src} WINDOW w AS (ROWS UNBOUNDED PRECEDING)` +
    `) AS "_svc_s" WHERE CASE WHEN "_svc_i" <= ${maxRows} THEN ${q(meta)}.over_limit("_svc_b") ELSE false END`;
  // Named, so the server parses and plans the wrapped statement once per connection, not per call
  // (backend.ts replaces a connection after a bounded number of uses, and what it prepared with it).
  const r = await c.query({ name: statementName(text), text, values: params, rowMode: 'array' });
  const fields = r.fields.slice(3);
  const colTypes = fields.map((f) => types.get(`${f.tableID}:${f.columnID}`));
  const names = fields.map((f) => f.name);
  const rows: Record<string, unknown>[] = [];
  let bytes = 0;
  let total = 0;
  for (const raw of r.rows as unknown[][]) {
    total = Number(raw[0]);
    const row: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    for (let i = 0; i < names.length; i++) row[names[i]!] = pgDecode(colTypes[i], raw[i + 3]);
    bytes += JSON.stringify(row).length;
    if (bytes > LIMITS.resultBytes) throw new AppError('data_limit', `The result exceeds ${LIMITS.resultBytes / 1048576} MiB; select fewer rows or columns (maxRows).`);
    rows.push(row);
  }
  return { rows, rowCount: mode === 'write' ? total : rows.length, truncated: total > maxRows };
}
