import type { ColumnDefT, ColumnType, TableDefT } from './schema.js';
import { constraintColumn } from './sqlite-errors.js';
import { decodeRow, literal } from './values.js';

// What differs between the SQL of the providers, in one small object each: the record batches
// (batch.ts, filter.ts), the schema's DDL (ddl.ts) and migrations (migrations.ts) are one
// generator that asks its dialect. SQLite's is here; PostgreSQL's is pg/dialect.ts.

export const q = (ident: string): string => `"${ident.replace(/"/g, '""')}"`;

/** A constraint failure read from a driver's error: the column (and table) it names, a message for people. */
export type ConstraintInfo = { column: string | null; table?: string; message: string; referencedBy?: string };

export interface Dialect {
  name: 'sqlite' | 'postgres';
  /** Boolean SQL literals (a `where` with no filter, an empty `in`). */
  true: string;
  false: string;
  /** `a IS DISTINCT FROM b`, as the dialect spells it. */
  distinct: string;
  /** Rows of one insert go in one statement (RETURNING them in order); serverStamps only. */
  multiRowInsert: boolean;
  /** A failed statement aborts the transaction: no statement may follow it. */
  abortsOnError: boolean;
  /** The last ORDER BY term of a `list`, so that offsets page in insertion order. */
  tiebreak: string;
  /** A `like` condition on column `c` (quoted) of `type`, with its one parameter as `?`. */
  like(c: string, type: ColumnType): string;
  /**
   * The server itself writes the system columns (_id, _version, _created_at, _updated_at) by
   * defaults and a trigger: the batch SQL leaves them out (Postgres: the caller's role has no
   * privilege on them). Otherwise the batch writes them (SQLite).
   */
  serverStamps: boolean;
  /** A row as the driver read it (every column) → the API's JSON row, in place. */
  decodeRow(def: TableDefT, row: Record<string, unknown>): Record<string, unknown>;
  /** The constraint a driver error is about; null when it is not a constraint failure. */
  constraintColumn(err: unknown): ConstraintInfo | null;
  // ---- DDL ----
  columnType: Record<ColumnType, string>;
  /** The system columns' definitions, first in every table. */
  systemColumns: string[];
  /** The column's checks, named after the column so that a failure names it. */
  check(name: string, col: ColumnDefT): string;
  /** A default's SQL literal (encoded by values.ts first). */
  literal(col: ColumnDefT, v: unknown): string;
  /** After `)` of CREATE TABLE. */
  tableOptions: string;
  /** Statements that follow a column's rename (a check named after the column keeps naming it). */
  renamed(table: string, from: string, to: string, col: ColumnDefT): string[];
  /** Triggers (or other statements) a new table needs after its CREATE TABLE. */
  tableTriggers(table: string): string[];
}

const NOW = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;
// A random (v4) UUID for rows inserted through raw SQL without an _id; the batch API writes v7 ids.
const UUID_DEFAULT = `lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`;

export const SQLITE: Dialect = {
  name: 'sqlite',
  true: '1',
  false: '0',
  distinct: 'IS NOT',
  abortsOnError: false,
  multiRowInsert: false,
  tiebreak: 'rowid ASC',
  like: (c) => `${c} LIKE ?`,
  serverStamps: false,
  decodeRow: (def, row) => decodeRow(def, row),
  constraintColumn: (err) => constraintColumn(err),
  columnType: { text: 'TEXT', integer: 'INTEGER', number: 'REAL', boolean: 'INTEGER', timestamp: 'TEXT', uuid: 'TEXT', json: 'TEXT' },
  systemColumns: [
    `"_id" TEXT PRIMARY KEY NOT NULL DEFAULT (${UUID_DEFAULT})`,
    `"_version" INTEGER NOT NULL DEFAULT 1`,
    `"_created_at" TEXT NOT NULL DEFAULT (${NOW})`,
    `"_updated_at" TEXT NOT NULL DEFAULT (${NOW})`,
  ],
  check(name, col) {
    const c = q(name);
    switch (col.type) {
      case 'boolean':
        return ` CONSTRAINT ${c} CHECK (${c} IN (0, 1))`;
      case 'json':
        return ` CONSTRAINT ${c} CHECK (json_valid(${c}))`;
      case 'uuid':
        return ` CONSTRAINT ${c} CHECK (length(${c}) = 36)`;
      case 'timestamp':
        return ` CONSTRAINT ${c} CHECK (${c} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]*')`;
      default:
        return '';
    }
  },
  literal: (col, v) => literal(col, v),
  tableOptions: ' STRICT',
  renamed: () => [],
  /**
   * Raw SQL may update rows without touching _version: the trigger bumps it (and _updated_at), so
   * an optimistic `expectedVersion` check never passes over a change it did not see.
   */
  tableTriggers: (table) => [
    `CREATE TRIGGER ${q(`_svc_${table}_version`)} AFTER UPDATE ON ${q(table)} FOR EACH ROW WHEN NEW."_version" = OLD."_version" BEGIN UPDATE ${q(table)} SET "_version" = OLD."_version" + 1, "_updated_at" = ${NOW} WHERE rowid = NEW.rowid; END`,
  ],
};
