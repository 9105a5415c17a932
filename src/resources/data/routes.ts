import { z } from 'zod';
import { route } from '../../app.js';
import type { ErrorCode } from '../../kernel/errors.js';
import { IdCursor, PageLimit, pageAnswer } from '../common.js';
import { CreateDatabaseIn, DatabaseOut, Deleted, DeleteQuery, MigrationIn, MigrationOut, QueryIn, QueryOut, RecordResult, ResourceParams, TransactionsIn } from './schema.js';
import * as data from './service.js';

const tag = 'Databases';
/** Every data_* code: a database route may answer any of them (validation is data_invalid here). */
const errors: ErrorCode[] = ['data_invalid', 'data_forbidden', 'data_not_found', 'data_conflict', 'data_limit', 'data_constraint', 'data_unavailable'];
const REPLAYED = 'Idempotent-Replayed';

export const dataRoutes = [
  route({
    method: 'POST',
    path: '/api/v1/data',
    operationId: 'createDatabase',
    summary: 'Create a database and its tables',
    description: 'Needs a full-access key or a grant of manage on "*". Names match ^[a-z][a-z0-9_-]{0,62}$; at most 32 tables, 64 columns and 16 indexes a table. 409 when the name is taken.',
    tag,
    scope: 'data',
    errors,
    body: CreateDatabaseIn,
    response: DatabaseOut,
    status: 201,
    handler: ({ app, principal, body }) => data.createDatabase(app, principal, body),
  }),
  route({
    method: 'GET',
    path: '/api/v1/data',
    operationId: 'listDatabases',
    summary: 'List databases (creation order); keys with grants see only what they may read',
    tag,
    scope: 'data',
    errors,
    query: z.strictObject({ limit: PageLimit, cursor: IdCursor }),
    response: z.array(DatabaseOut),
    handler: async ({ app, principal, query, setHeader }) => pageAnswer(setHeader, await data.listDatabases(app, principal, query)),
  }),
  route({
    method: 'GET',
    path: '/api/v1/data/{resource}',
    operationId: 'getDatabase',
    summary: 'Show a database; tables the key has no grant on are left out',
    tag,
    scope: 'data',
    errors,
    params: ResourceParams,
    response: DatabaseOut,
    handler: async ({ app, principal, params }) => await data.getDatabase(app, principal, params.resource),
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/data/{resource}',
    operationId: 'deleteDatabase',
    summary: 'Delete a database and its records (its file is removed)',
    tag,
    scope: 'data',
    errors,
    params: ResourceParams,
    query: DeleteQuery,
    response: Deleted,
    handler: async ({ app, principal, params, query }) => {
      await data.deleteDatabase(app, principal, params.resource, query.expectedVersion === undefined ? undefined : Number(query.expectedVersion));
      return { deleted: true as const };
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/data/{resource}/transactions',
    operationId: 'runDatabaseTransaction',
    summary: 'Run an atomic batch of record operations',
    description:
      'Operations: list, get, insert (values or rows), upsert (onConflict), update and delete (by _id, optional expectedVersion). The whole batch is validated before any write and runs in one transaction; a failure names the operation index and field and leaves nothing behind. A replayed idempotencyKey answers the stored result with Idempotent-Replayed: true.',
    tag,
    scope: 'data',
    errors,
    params: ResourceParams,
    body: TransactionsIn,
    response: z.array(RecordResult),
    handler: async ({ app, principal, params, body, setHeader }) => {
      const r = await data.transactions(app, principal, params.resource, body);
      if (r.replayed) setHeader(REPLAYED, 'true');
      return r.answer;
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/data/{resource}/query',
    operationId: 'queryDatabase',
    summary: 'Run one scoped SQL statement (read, or write with mode "write")',
    description:
      "One statement in the dialect of the project's data provider (project.json `data.provider`): SQLite by default, `?` placeholders; PostgreSQL with provider postgres, `$1`…`$n` placeholders, in the subset docs/data.md lists. " +
      "Read mode admits only statements that cannot write; write mode admits INSERT, UPDATE and DELETE (and SQLite's REPLACE), RETURNING allowed. DDL, transactions, writes to the system columns and, on SQLite, ATTACH/DETACH, PRAGMA, VACUUM, load_extension, virtual tables and sqlite_* are refused. Stopped after data.statementTimeoutMs (503); results over 1 MiB are 413.",
    tag,
    scope: 'data',
    errors,
    params: ResourceParams,
    body: QueryIn,
    response: QueryOut,
    handler: async ({ app, principal, params, body, setHeader }) => {
      const r = await data.query(app, principal, params.resource, body);
      if (r.replayed) setHeader(REPLAYED, 'true');
      return r.answer;
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/data/{resource}/migrations',
    operationId: 'migrateDatabase',
    summary: 'Apply a structured migration (schemaVersion + 1)',
    description:
      'Steps: addTable, addColumn, addIndex, dropIndex, renameColumn, dropColumn, dropTable (the last three only with allowDestructive). Applied atomically; expectedVersion must equal the current schemaVersion (else 409). The same id with the same content replays the first answer (Idempotent-Replayed: true); with other content it is a 409.',
    tag,
    scope: 'data',
    errors,
    params: ResourceParams,
    body: MigrationIn,
    response: DatabaseOut,
    status: 201,
    handler: async ({ app, principal, params, body, setHeader }) => {
      const r = await data.migrate(app, principal, params.resource, body);
      if (r.replayed) setHeader(REPLAYED, 'true');
      return r.database;
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/data/{resource}/migrations',
    operationId: 'listDatabaseMigrations',
    summary: 'List applied migrations, oldest first',
    tag,
    scope: 'data',
    errors,
    params: ResourceParams,
    response: z.array(MigrationOut),
    handler: ({ app, principal, params }) => data.listMigrations(app, principal, params.resource),
  }),
];
