import { z } from 'zod';
import { UUID_RE } from '../../lib/ids.js';
import { Timestamp } from '../common.js';

// Application databases: the wire shapes (DESIGN section 7, the reference's Databases section).

export const LIMITS = {
  tables: 32,
  columns: 64,
  indexes: 16,
  operations: 100,
  insertRows: 1000,
  listLimit: 200,
  listOffset: 10_000,
  inItems: 100,
  filterDepth: 8,
  sqlLength: 65_536,
  params: 1000,
  paramLength: 65_536,
  maxRows: 200,
  resultBytes: 1024 * 1024,
  /** A batch's results may be larger than a query's (200 rows × 100 operations), but not unbounded. */
  batchResultBytes: 8 * 1024 * 1024,
  migrationSteps: 100,
} as const;

export const COLUMN_TYPES = ['text', 'integer', 'number', 'boolean', 'timestamp', 'uuid', 'json'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export const SYSTEM_COLUMNS = ['_id', '_version', '_created_at', '_updated_at'] as const;

export const IDENT_RE = /^[a-z][a-z0-9_]{0,47}$/;
export const Identifier = z
  .string()
  .regex(IDENT_RE, 'must match ^[a-z][a-z0-9_]{0,47}$')
  .refine((s) => !s.startsWith('sqlite_'), 'names starting with sqlite_ are reserved');

export const DB_NAME_RE = /^[a-z][a-z0-9_-]{0,62}$/;
export const DatabaseName = z
  .string()
  .regex(DB_NAME_RE, 'must match ^[a-z][a-z0-9_-]{0,62}$')
  .refine((s) => !UUID_RE.test(s), 'must not look like a UUID');

const JsonValue: z.ZodType<unknown> = z.unknown();

export const ColumnDef = z.strictObject({
  type: z.enum(COLUMN_TYPES),
  nullable: z.boolean().optional().describe('Allow null (default false: the column is NOT NULL).'),
  unique: z.boolean().optional(),
  default: JsonValue.optional().describe('A value of the column type, used when an insert leaves the column out.'),
  references: z
    .strictObject({ table: Identifier, column: z.string().min(1).max(48) })
    .optional()
    .describe('A foreign key to `_id` or a unique column.'),
});
export type ColumnDefT = z.output<typeof ColumnDef>;

export const IndexDef = z.strictObject({
  name: Identifier.optional(),
  columns: z.array(z.string().min(1).max(48)).min(1).max(16),
  unique: z.boolean().optional(),
});
export type IndexDefT = z.output<typeof IndexDef>;

export const TableDef = z.strictObject({
  columns: z
    .record(Identifier, ColumnDef)
    .refine((c) => Object.keys(c).length >= 1, 'a table needs at least one column')
    .refine((c) => Object.keys(c).length <= LIMITS.columns, `at most ${LIMITS.columns} columns a table`),
  indexes: z.array(IndexDef).max(LIMITS.indexes, `at most ${LIMITS.indexes} indexes a table`).optional(),
});
export type TableDefT = z.output<typeof TableDef>;

export const SchemaDef = z.strictObject({
  tables: z.record(Identifier, TableDef).refine((t) => Object.keys(t).length <= LIMITS.tables, `at most ${LIMITS.tables} tables`),
});
export type SchemaDefT = z.output<typeof SchemaDef>;

export const CreateDatabaseIn = z.strictObject({
  name: DatabaseName,
  schema: SchemaDef,
});

export const DatabaseOut = z.object({
  id: z.uuid(),
  name: z.string(),
  schema: SchemaDef,
  schemaVersion: z.int().min(1),
  createdAt: Timestamp,
});
export type Database = z.output<typeof DatabaseOut>;

export const ResourceParams = z.strictObject({ resource: z.string().min(1).max(128).describe('Database name or UUID.') });

export const DeleteQuery = z.strictObject({
  expectedVersion: z
    .string()
    .regex(/^[1-9][0-9]*$/, 'must be a positive integer without leading zeros')
    .optional()
    .describe('When given, the database is deleted only if its schemaVersion equals it (else 409).'),
});

export const Deleted = z.object({ deleted: z.literal(true) });

// ---- record operations ----

const Scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const Cond = z.strictObject({
  eq: JsonValue.optional(),
  ne: JsonValue.optional(),
  gt: Scalar.optional(),
  gte: Scalar.optional(),
  lt: Scalar.optional(),
  lte: Scalar.optional(),
  in: z.array(JsonValue).max(LIMITS.inItems).optional(),
  like: z.string().max(1000).optional(),
  isNull: z.boolean().optional(),
});
export type Condition = z.output<typeof Cond>;
/** Checked structurally by filter.ts, which knows the columns; zod keeps it an object. */
export const Filter = z.record(z.string(), z.unknown()).describe('{<column>: value | {eq, ne, gt, gte, lt, lte, in, like, isNull}}, AND-combined, plus or: [filter, ...].');
export type FilterT = Record<string, unknown>;

export const OrderBy = z.array(z.strictObject({ column: z.string().min(1).max(48), direction: z.enum(['asc', 'desc']).optional() })).max(8);
export type OrderByT = z.output<typeof OrderBy>;

const Values = z.record(z.string(), JsonValue);
const Id = z.string().min(1).max(128);
const ExpectedVersion = z.int().min(1).optional();

export const Operation = z.discriminatedUnion('op', [
  z.strictObject({
    op: z.literal('list'),
    table: z.string().min(1).max(48),
    filter: Filter.optional(),
    orderBy: OrderBy.optional(),
    limit: z.int().min(1).max(LIMITS.listLimit).optional(),
    offset: z.int().min(0).max(LIMITS.listOffset).optional(),
  }),
  z.strictObject({ op: z.literal('get'), table: z.string().min(1).max(48), id: Id }),
  z.strictObject({ op: z.literal('insert'), table: z.string().min(1).max(48), values: Values.optional(), rows: z.array(Values).min(1).max(LIMITS.insertRows).optional() }),
  z.strictObject({ op: z.literal('upsert'), table: z.string().min(1).max(48), values: Values, onConflict: z.array(z.string().min(1).max(48)).min(1).max(16) }),
  z.strictObject({ op: z.literal('update'), table: z.string().min(1).max(48), id: Id, expectedVersion: ExpectedVersion, values: Values }),
  z.strictObject({ op: z.literal('delete'), table: z.string().min(1).max(48), id: Id, expectedVersion: ExpectedVersion }),
]);
export type OperationT = z.output<typeof Operation>;

export const IdempotencyKey = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

export const TransactionsIn = z.strictObject({
  operations: z.array(Operation).min(1).max(LIMITS.operations),
  idempotencyKey: IdempotencyKey.optional(),
});

export const RecordResult = z.object({
  rows: z.array(z.record(z.string(), z.unknown())),
  total: z.int(),
  nextOffset: z.int().nullable(),
});
export type RecordResultT = z.output<typeof RecordResult>;

// ---- scoped SQL ----

export const QueryIn = z.strictObject({
  // SQLite stops reading at a NUL: whatever follows it would be silently dropped.
  sql: z
    .string()
    .min(1)
    .max(LIMITS.sqlLength)
    .refine((s) => !s.includes('\u0000'), 'must not contain a NUL character'),
  params: z
    .array(z.union([z.string().max(LIMITS.paramLength), z.number(), z.boolean(), z.null()]))
    .max(LIMITS.params)
    .optional(),
  mode: z.enum(['read', 'write']).optional(),
  maxRows: z.int().min(1).max(LIMITS.maxRows).optional(),
  idempotencyKey: IdempotencyKey.optional(),
});
export type QueryInT = z.output<typeof QueryIn>;

export const QueryOut = z.object({
  rows: z.array(z.record(z.string(), z.unknown())),
  rowCount: z.int(),
  truncated: z.boolean(),
});
export type QueryResult = z.output<typeof QueryOut>;

// ---- migrations ----

export const Step = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('addTable'), table: Identifier, definition: TableDef }),
  z.strictObject({ op: z.literal('addColumn'), table: Identifier, column: Identifier, definition: ColumnDef }),
  z.strictObject({ op: z.literal('addIndex'), table: Identifier, index: IndexDef }),
  z.strictObject({ op: z.literal('dropIndex'), table: Identifier, name: Identifier }),
  z.strictObject({ op: z.literal('renameColumn'), table: Identifier, from: Identifier, to: Identifier }),
  z.strictObject({ op: z.literal('dropColumn'), table: Identifier, column: Identifier }),
  z.strictObject({ op: z.literal('dropTable'), table: Identifier }),
]);
export type StepT = z.output<typeof Step>;

export const MigrationIn = z.strictObject({
  id: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces'),
  expectedVersion: z.int().min(1),
  steps: z.array(Step).min(1).max(LIMITS.migrationSteps),
  allowDestructive: z.boolean().optional(),
});
export type MigrationInT = z.output<typeof MigrationIn>;

export const MigrationOut = z.object({
  id: z.string(),
  checksum: z.string(),
  schemaVersion: z.int(),
  appliedAt: Timestamp,
});
export type MigrationRecord = z.output<typeof MigrationOut>;
