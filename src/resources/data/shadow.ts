import Database from '../../db/sqlite.js';
import { indexSql, q } from './ddl.js';
import { SYSTEM_COLUMNS, type SchemaDefT } from './schema.js';

// The system columns and the rowids stay the server's because SQLite itself says so, not because
// a tokenizer of ours read the SQL the way SQLite does (it did not: U+00A0 is whitespace to
// JavaScript and part of an identifier to SQLite, so an alias could hide a SET target).
//
// Caller SQL is compiled first against a "shadow": an empty in-memory database with this
// database's tables, columns (in the same order) and indexes (same names), in which `_id`,
// `_version`, `_created_at`, `_updated_at` and the rowid's names (`rowid`, `oid`, `_rowid_`,
// where no column of the table has that name) are GENERATED ALWAYS columns. SQLite resolves every
// name exactly as in the real file and refuses, whatever the spelling (quotes, brackets, case,
// aliases, table-qualified, row values, upsert DO UPDATE SET), any INSERT into or UPDATE of a
// generated column. Reading them (WHERE rowid = ?, RETURNING _id) compiles as before. And since
// untrusted SQL is compiled here first, whatever a statement would do at compile time (a PRAGMA
// takes effect when it is prepared) happens to a throwaway connection, never to the real one.

/** The rowid's three names: a table column of that name hides it, so only the others are shadowed. */
const ROWID_NAMES = ['rowid', 'oid', '_rowid_'] as const;

const generated = (name: string): string => `${q(name)} ANY GENERATED ALWAYS AS (NULL) VIRTUAL`;

/** The shadow's DDL for a schema: same tables, columns and index names; system columns generated. */
export function shadowDdl(schema: SchemaDefT): string[] {
  const out: string[] = [];
  for (const [table, def] of Object.entries(schema.tables)) {
    const cols = [
      ...SYSTEM_COLUMNS.map(generated),
      ...Object.entries(def.columns).map(([name, col]) => `${q(name)} ANY${col.unique ? ' UNIQUE' : ''}`),
      ...ROWID_NAMES.filter((n) => !Object.hasOwn(def.columns, n)).map(generated),
    ];
    out.push(`CREATE TABLE ${q(table)} (${cols.join(', ')})`);
    // _id is the primary key of the real table: ON CONFLICT (_id) must find a unique index here too.
    out.push(`CREATE UNIQUE INDEX ${q(`_svc_shadow_${table}_id`)} ON ${q(table)} ("_id")`);
    for (const ix of def.indexes ?? []) out.push(indexSql(table, ix));
  }
  return out;
}

/** Why the shadow refused a statement that the real file may have compiled, in the API's words. */
export type ShadowRefusal = { kind: 'system'; column: string } | { kind: 'rowid'; column: string } | { kind: 'values' };

/** Reads a shadow compile error: a write to a generated column, or a positional INSERT's count. */
export function shadowRefusal(message: string): ShadowRefusal | null {
  const m = /cannot (?:UPDATE|INSERT into) generated column "([^"]+)"/.exec(message);
  if (m) {
    const column = m[1]!;
    return (ROWID_NAMES as readonly string[]).includes(column.toLowerCase()) ? { kind: 'rowid', column } : { kind: 'system', column };
  }
  // A positional INSERT (no column list) counts the system columns in the real table and not here,
  // so it can compile in at most one of the two: here only when it would write them.
  if (/has \d+ columns but \d+ values were supplied/.test(message)) return { kind: 'values' };
  return null;
}

export class ShadowSchema {
  private db: Database.Database | null = null;

  constructor(private readonly schema: SchemaDefT) {}

  /**
   * Compiles `sql` on the shadow and hands its EXPLAIN program to `inspect`. A compile error, or
   * whatever `inspect` throws, is thrown as is, and the connection is dropped (rebuilt on next
   * use): nothing a refused statement did while compiling outlives it.
   */
  compile(sql: string, params: unknown[], inspect: (program: unknown[]) => void): void {
    const db = (this.db ??= this.open());
    try {
      inspect(db.prepare(`EXPLAIN ${sql}`).all(...params));
    } catch (err) {
      this.close();
      throw err;
    }
  }

  close(): void {
    this.db?.close();
    this.db = null;
  }

  private open(): Database.Database {
    const db = new Database(':memory:');
    db.exec(shadowDdl(this.schema).join(';\n'));
    return db;
  }
}
