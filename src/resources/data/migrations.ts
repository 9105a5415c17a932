import { createHash } from 'node:crypto';
import { AppError } from '../../kernel/errors.js';
import { checkColumn, checkSchema, columnSql, createTableSql, indexName, indexSql, objectNames, q, SchemaError } from './ddl.js';
import { SQLITE, type Dialect } from './dialect.js';
import { canonicalJson } from './idempotency.js';
import { LIMITS, type MigrationInT, type SchemaDefT, type StepT, type TableDefT } from './schema.js';

// Structured migrations: each step changes a copy of the schema and yields its DDL. The whole
// list is checked before the first statement runs; the caller runs the DDL in one transaction.

const DESTRUCTIVE = new Set(['dropColumn', 'dropTable', 'dropIndex']);

/** Identifies a migration's content: the same id with another checksum is a different migration. */
export function migrationChecksum(m: MigrationInT): string {
  const { id: _id, ...content } = m;
  return createHash('sha256')
    .update(canonicalJson({ ...content, allowDestructive: Boolean(content.allowDestructive) }))
    .digest('hex');
}

const bad = (i: number, field: string, message: string): AppError =>
  new AppError('data_invalid', `steps[${i}]: ${message}.`, { details: [{ path: `body.steps.${i}${field ? `.${field}` : ''}`, message }] });

export function planMigration(schema: SchemaDefT, m: MigrationInT, d: Dialect = SQLITE): { schema: SchemaDefT; ddl: string[] } {
  const next: SchemaDefT = structuredClone(schema);
  const ddl: string[] = [];
  m.steps.forEach((step, i) => {
    if (DESTRUCTIVE.has(step.op) && !m.allowDestructive) throw bad(i, 'op', `${step.op} removes data; send allowDestructive: true to apply it`);
    try {
      applyStep(next, step, i, ddl, d);
    } catch (err) {
      if (err instanceof SchemaError) throw bad(i, err.path, err.message);
      throw err;
    }
  });
  if (Object.keys(next.tables).length > LIMITS.tables) throw bad(m.steps.length - 1, '', `a database has at most ${LIMITS.tables} tables`);
  try {
    checkSchema(next, 'schema');
  } catch (err) {
    if (err instanceof SchemaError)
      throw new AppError('data_invalid', `The migrated schema is invalid: ${err.path}: ${err.message}.`, { details: [{ path: 'body.steps', message: `${err.path}: ${err.message}` }] });
    throw err;
  }
  return { schema: next, ddl };
}

function tableIn(schema: SchemaDefT, table: string): TableDefT {
  const def = Object.hasOwn(schema.tables, table) ? schema.tables[table] : undefined;
  if (!def) throw new SchemaError('table', `there is no table ${table}`);
  return def;
}

/** Columns of other tables (or this one) that reference table.column. */
function referrers(schema: SchemaDefT, table: string, column?: string): string[] {
  const out: string[] = [];
  for (const [t, def] of Object.entries(schema.tables)) {
    for (const [c, col] of Object.entries(def.columns)) {
      if (col.references?.table === table && (column === undefined || col.references.column === column) && !(t === table && column === undefined)) out.push(`${t}.${c}`);
    }
  }
  return out;
}

function applyStep(schema: SchemaDefT, step: StepT, _i: number, ddl: string[], d: Dialect): void {
  switch (step.op) {
    case 'addTable': {
      if (objectNames(schema).has(step.table)) throw new SchemaError('table', `the name ${step.table} is already used by a table or index`);
      const indexes = (step.definition.indexes ?? []).map((ix, j) => {
        const name = indexName(step.table, ix);
        if (objectNames(schema).has(name) || name === step.table) throw new SchemaError(`definition.indexes.${j}.name`, `the name ${name} is already used`);
        return { name, columns: ix.columns, ...(ix.unique ? { unique: true } : {}) };
      });
      const def: TableDefT = { columns: step.definition.columns, ...(indexes.length ? { indexes } : {}) };
      schema.tables[step.table] = def;
      for (const [c, col] of Object.entries(def.columns)) checkColumn(schema, c, col, `definition.columns.${c}`);
      ddl.push(...createTableSql(step.table, def, d));
      return;
    }
    case 'addColumn': {
      const def = tableIn(schema, step.table);
      if (Object.hasOwn(def.columns, step.column)) throw new SchemaError('column', `table ${step.table} already has a column ${step.column}`);
      if (Object.keys(def.columns).length >= LIMITS.columns) throw new SchemaError('column', `a table has at most ${LIMITS.columns} columns`);
      const col = step.definition;
      if (!col.nullable && (col.default === undefined || col.default === null)) throw new SchemaError('definition.nullable', 'a column added to an existing table needs nullable: true or a default');
      if (col.references && col.default !== undefined && col.default !== null) throw new SchemaError('definition.default', 'a referencing column added later cannot have a default');
      def.columns[step.column] = col;
      checkColumn(schema, step.column, col, 'definition');
      // SQLite cannot add a UNIQUE column; a unique index gives the same guarantee.
      ddl.push(`ALTER TABLE ${q(step.table)} ADD COLUMN ${columnSql(step.column, { ...col, unique: false }, d)}`);
      if (col.unique) ddl.push(`CREATE UNIQUE INDEX ${q(`_svc_${step.table}_${step.column}_unique`)} ON ${q(step.table)} (${q(step.column)})`);
      return;
    }
    case 'addIndex': {
      const def = tableIn(schema, step.table);
      if ((def.indexes ?? []).length >= LIMITS.indexes) throw new SchemaError('index', `a table has at most ${LIMITS.indexes} indexes`);
      const name = indexName(step.table, step.index);
      if (objectNames(schema).has(name)) throw new SchemaError('index.name', `the name ${name} is already used by a table or index`);
      const ix = { name, columns: step.index.columns, ...(step.index.unique ? { unique: true } : {}) };
      def.indexes = [...(def.indexes ?? []), ix];
      ddl.push(indexSql(step.table, ix));
      return;
    }
    case 'dropIndex': {
      const def = tableIn(schema, step.table);
      if (!(def.indexes ?? []).some((ix) => ix.name === step.name)) throw new SchemaError('name', `table ${step.table} has no index ${step.name}`);
      def.indexes = def.indexes!.filter((ix) => ix.name !== step.name);
      if (!def.indexes.length) delete def.indexes;
      ddl.push(`DROP INDEX ${q(step.name)}`);
      return;
    }
    case 'renameColumn': {
      const def = tableIn(schema, step.table);
      if (!Object.hasOwn(def.columns, step.from)) throw new SchemaError('from', `table ${step.table} has no column ${step.from}`);
      if (Object.hasOwn(def.columns, step.to)) throw new SchemaError('to', `table ${step.table} already has a column ${step.to}`);
      def.columns = Object.fromEntries(Object.entries(def.columns).map(([k, v]) => [k === step.from ? step.to : k, v]));
      for (const ix of def.indexes ?? []) ix.columns = ix.columns.map((c) => (c === step.from ? step.to : c));
      for (const t of Object.values(schema.tables)) {
        for (const col of Object.values(t.columns)) if (col.references?.table === step.table && col.references.column === step.from) col.references = { ...col.references, column: step.to };
      }
      ddl.push(`ALTER TABLE ${q(step.table)} RENAME COLUMN ${q(step.from)} TO ${q(step.to)}`);
      ddl.push(...d.renamed(step.table, step.from, step.to, def.columns[step.to]!));
      return;
    }
    case 'dropColumn': {
      const def = tableIn(schema, step.table);
      const col = Object.hasOwn(def.columns, step.column) ? def.columns[step.column] : undefined;
      if (!col) throw new SchemaError('column', `table ${step.table} has no column ${step.column}`);
      if (Object.keys(def.columns).length === 1) throw new SchemaError('column', 'a table keeps at least one column; drop the table instead');
      const refs = referrers(schema, step.table, step.column);
      if (refs.length) throw new SchemaError('column', `${refs.join(', ')} references it; change those first`);
      const ix = (def.indexes ?? []).find((x) => x.columns.includes(step.column));
      if (ix) throw new SchemaError('column', `index ${ix.name} uses it; drop the index first`);
      if (col.unique) throw new SchemaError('column', 'a unique column cannot be dropped in place; copy the data to a new table instead');
      if (col.references) throw new SchemaError('column', 'a referencing column cannot be dropped in place; copy the data to a new table instead');
      delete def.columns[step.column];
      ddl.push(`ALTER TABLE ${q(step.table)} DROP COLUMN ${q(step.column)}`);
      return;
    }
    case 'dropTable': {
      tableIn(schema, step.table);
      const refs = referrers(schema, step.table).filter((r) => !r.startsWith(`${step.table}.`));
      if (refs.length) throw new SchemaError('table', `${refs.join(', ')} references it; change those first`);
      delete schema.tables[step.table];
      ddl.push(`DROP TABLE ${q(step.table)}`);
      return;
    }
  }
}
