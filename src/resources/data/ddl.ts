import { SYSTEM_COLUMNS, type ColumnDefT, type IndexDefT, type SchemaDefT, type TableDefT } from './schema.js';
import { q, SQLITE, type Dialect } from './dialect.js';
import { TIMESTAMP_REFUSAL } from './sqlite-errors.js';
import { literal, ValueError } from './values.js';

// A database's schema as SQL. Identifiers reach SQL only after schema.ts checked them against
// ^[a-z][a-z0-9_]{0,47}$ and they are always double-quoted; defaults are encoded literals.

/** A schema problem, with the JSON path of the offending part (relative to the body). */
export class SchemaError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

export { q };

export function columnSql(name: string, col: ColumnDefT, d: Dialect = SQLITE): string {
  let s = `${q(name)} ${d.columnType[col.type]}`;
  if (!col.nullable) s += ' NOT NULL';
  if (col.unique) s += ' UNIQUE';
  if (col.default !== undefined) s += ` DEFAULT ${d.literal(col, col.default)}`;
  s += d.check(name, col);
  if (col.references) s += ` REFERENCES ${q(col.references.table)} (${q(col.references.column)})`;
  return s;
}

export function createTableSql(table: string, def: TableDefT, d: Dialect = SQLITE): string[] {
  const cols = [...d.systemColumns, ...Object.entries(def.columns).map(([n, c]) => columnSql(n, c, d))];
  return [`CREATE TABLE ${q(table)} (\n  ${cols.join(',\n  ')}\n)${d.tableOptions}`, ...d.tableTriggers(table), ...(def.indexes ?? []).map((ix) => indexSql(table, ix))];
}

/**
 * A timestamp column holds one spelling of an instant, the one the batch path writes
 * (`Date#toISOString()`: UTC, milliseconds, `Z`), so that comparing and ordering the text in SQL
 * compares the instants. The column's CHECK only looks at the shape; these triggers refuse any
 * other spelling from raw SQL (an offset, no zone, a date alone, 24:00), whatever the statement:
 * INSERT … VALUES or SELECT, UPDATE, upserts, REPLACE. They refuse rather than convert because
 * SQLite cannot change a row in a BEFORE trigger, and converting after the write would bump
 * `_version` twice and make `RETURNING` show a value that is not the one stored.
 * `strftime(…, '+0 seconds')` is the canonical text of what SQLite reads, normalised (without the
 * modifier, 24:00:00 would come back as it was given).
 */
export function timestampTriggerSql(schema: SchemaDefT): string[] {
  const out: string[] = [];
  for (const [table, def] of Object.entries(schema.tables)) {
    for (const [column, col] of Object.entries(def.columns)) {
      if (col.type !== 'timestamp') continue;
      const c = `NEW.${q(column)}`;
      const refuse = `SELECT RAISE(ABORT, '${TIMESTAMP_REFUSAL} ${table}.${column}') WHERE ${c} IS NOT NULL AND ${c} IS NOT strftime('%Y-%m-%dT%H:%M:%fZ', ${c}, '+0 seconds')`;
      // One trigger per column and event: an UPDATE that does not set the column does not check
      // it, so a row holding an old unconvertible value can still have its other columns changed.
      out.push(`CREATE TRIGGER ${q(`${TIMESTAMP_TRIGGER}${table}.${column}:insert`)} BEFORE INSERT ON ${q(table)} FOR EACH ROW BEGIN ${refuse}; END`);
      out.push(`CREATE TRIGGER ${q(`${TIMESTAMP_TRIGGER}${table}.${column}:update`)} BEFORE UPDATE OF ${q(column)} ON ${q(table)} FOR EACH ROW BEGIN ${refuse}; END`);
    }
  }
  return out;
}

/** Names of the timestamp triggers start with this ('.' and ':' keep table and column apart). */
export const TIMESTAMP_TRIGGER = '_svc_ts:';

export function indexSql(table: string, ix: IndexDefT): string {
  return `CREATE ${ix.unique ? 'UNIQUE ' : ''}INDEX ${q(ix.name!)} ON ${q(table)} (${ix.columns.map(q).join(', ')})`;
}

export const indexName = (table: string, ix: IndexDefT): string => ix.name ?? `${table}_${ix.columns.join('_')}_idx`.slice(0, 120);

const isSystem = (c: string): boolean => (SYSTEM_COLUMNS as readonly string[]).includes(c);

/** Every object name in the database file: tables and indexes share SQLite's one namespace. */
export function objectNames(schema: SchemaDefT): Set<string> {
  const names = new Set<string>();
  for (const [t, def] of Object.entries(schema.tables)) {
    names.add(t);
    for (const ix of def.indexes ?? []) names.add(ix.name!);
  }
  return names;
}

/**
 * Checks what zod cannot (references, index columns, unique names, typed defaults) and returns the
 * schema with every index named, as it is stored and returned. `base` is the body path prefix.
 */
export function normalizeSchema(schema: SchemaDefT, base = 'schema'): SchemaDefT {
  const out: SchemaDefT = { tables: {} };
  const seen = new Set<string>(Object.keys(schema.tables));
  for (const [t, def] of Object.entries(schema.tables)) {
    const indexes: IndexDefT[] = [];
    (def.indexes ?? []).forEach((ix, i) => {
      const name = indexName(t, ix);
      if (seen.has(name)) throw new SchemaError(`${base}.tables.${t}.indexes.${i}.name`, `the name ${name} is already used by a table or index`);
      seen.add(name);
      indexes.push({ name, columns: ix.columns, ...(ix.unique ? { unique: true } : {}) });
    });
    out.tables[t] = { columns: def.columns, ...(indexes.length ? { indexes } : {}) };
  }
  checkSchema(out, base);
  return out;
}

/** References, defaults and index columns of a whole schema (after a migration too). */
export function checkSchema(schema: SchemaDefT, base = 'schema'): void {
  for (const [t, def] of Object.entries(schema.tables)) {
    for (const [c, col] of Object.entries(def.columns)) {
      checkColumn(schema, c, col, `${base}.tables.${t}.columns.${c}`);
    }
    (def.indexes ?? []).forEach((ix, i) => {
      const seen = new Set<string>();
      ix.columns.forEach((c, j) => {
        const path = `${base}.tables.${t}.indexes.${i}.columns.${j}`;
        if (!isSystem(c) && !Object.hasOwn(def.columns, c)) throw new SchemaError(path, `table ${t} has no column ${c}`);
        if (seen.has(c)) throw new SchemaError(path, `column ${c} is listed twice`);
        seen.add(c);
      });
    });
  }
}

export function checkColumn(schema: SchemaDefT, _name: string, col: ColumnDefT, path: string): void {
  if (col.default !== undefined) {
    if (col.default === null && !col.nullable) throw new SchemaError(`${path}.default`, 'a null default needs nullable: true');
    try {
      literal(col, col.default);
    } catch (err) {
      if (err instanceof ValueError) throw new SchemaError(`${path}.default`, `the default ${err.message}`);
      throw err;
    }
  }
  const ref = col.references;
  if (ref) {
    const target = Object.hasOwn(schema.tables, ref.table) ? schema.tables[ref.table] : undefined;
    if (!target) throw new SchemaError(`${path}.references.table`, `there is no table ${ref.table}`);
    if (ref.column === '_id') {
      if (col.type !== 'uuid' && col.type !== 'text') throw new SchemaError(`${path}.type`, 'a column referencing _id must be of type uuid or text');
    } else {
      const rc = Object.hasOwn(target.columns, ref.column) ? target.columns[ref.column] : undefined;
      if (!rc) throw new SchemaError(`${path}.references.column`, `table ${ref.table} has no column ${ref.column}`);
      if (!rc.unique) throw new SchemaError(`${path}.references.column`, `${ref.table}.${ref.column} must be unique (or reference _id)`);
      if (rc.type !== col.type) throw new SchemaError(`${path}.type`, `must be of the referenced column's type (${rc.type})`);
    }
  }
}
