import { serviceKey, type App } from '../../app.js';
import { lockKey } from '../../db/open.js';
import type { Principal } from '../../kernel/auth.js';
import { AppError } from '../../kernel/errors.js';
import { UUID_RE, uuidv7 } from '../../lib/ids.js';
import { nowIso } from '../../lib/time.js';
import { toPage, type Page } from '../common.js';
import type { DataBackend, DatabaseState, EncodedAnswer } from './backend.js';
import { isWriteOp, opError } from './batch.js';
import { normalizeSchema, SchemaError } from './ddl.js';
import { canSee, canUseTable, requireCreate, requireManage, requireRead, tableGrants } from './grants.js';
import { requestHash, type IdempotencyRef } from './idempotency.js';
import { migrationChecksum } from './migrations.js';
import type { Database, MigrationInT, MigrationRecord, OperationT, QueryInT, QueryResult, RecordResultT, SchemaDefT } from './schema.js';
import { LIMITS } from './schema.js';
import { JsonText } from '../../kernel/route.js';
import * as store from './store.js';

/** Where application databases live (data.provider, chosen at start), wired by the daemon's data provider part. */
export const DATA_BACKEND = serviceKey<DataBackend>('data.backend');

/** The provider chosen at start (a change of data.provider applies at the next start). */
function backend(app: App): DataBackend {
  return app.services.get(DATA_BACKEND);
}

/** The registry follows the database: after a crash between a migration's commit and the registry update, the next open catches up. */
export async function reconcile(app: App, id: string, state: DatabaseState): Promise<void> {
  const d = await store.getById(app.db, id);
  if (d && d.schemaVersion !== state.schemaVersion) {
    await store.setSchema(app.db, id, state.schema, state.schemaVersion, nowIso(app.clock));
    app.log.warn('database registry caught up with its file', { database: id, schemaVersion: state.schemaVersion });
  }
}

export async function resolve(app: App, ref: string): Promise<Database> {
  const d = UUID_RE.test(ref) ? await store.getById(app.db, ref) : await store.getByName(app.db, ref);
  if (!d) throw new AppError('data_not_found', `No database ${JSON.stringify(ref)}.`);
  return d;
}

/** The database as this key may see it: tables it has no grant on are left out. */
function visible(p: Principal | null, d: Database): Database {
  const { read } = tableGrants(p, d);
  if (read === '*') return d;
  return { ...d, schema: { tables: Object.fromEntries(Object.entries(d.schema.tables).filter(([t]) => read.includes(t))) } };
}

export async function createDatabase(app: App, p: Principal | null, body: { name: string; schema: SchemaDefT }): Promise<Database> {
  requireCreate(p);
  let schema: SchemaDefT;
  try {
    schema = normalizeSchema(body.schema);
  } catch (err) {
    if (err instanceof SchemaError) throw new AppError('data_invalid', `${err.path}: ${err.message}.`, { details: [{ path: `body.${err.path}`, message: err.message }] });
    throw err;
  }
  if (await store.getByName(app.db, body.name)) throw nameTaken(body.name);
  const d: Database = { id: uuidv7(), name: body.name, schema, schemaVersion: 1, createdAt: nowIso(app.clock) };
  await backend(app).create(d.id, schema);
  try {
    await app.events.write(async () => {
      // Two creations of one name, on two daemons: the second finds the first (lockKey).
      await lockKey(app.db, 'database', body.name);
      if (await store.getByName(app.db, body.name)) throw nameTaken(body.name);
      await store.insertDatabase(app.db, d);
      app.events.emit('data:created', { id: d.id, name: d.name });
    });
  } catch (err) {
    await backend(app).drop(d.id);
    throw err;
  }
  return d;
}

const nameTaken = (name: string) => new AppError('data_conflict', `A database named ${name} already exists.`, { details: [{ path: 'body.name', message: 'already exists' }] });

export async function listDatabases(app: App, p: Principal | null, q: { limit: number; cursor?: string }): Promise<Page<Database>> {
  const rows = await store.listDatabases(app.db, { after: q.cursor, limit: q.limit + 1 });
  const page = toPage(rows, q.limit, (d) => d.id);
  return { items: page.items.filter((d) => canSee(p, d)).map((d) => visible(p, d)), next: page.next };
}

export async function getDatabase(app: App, p: Principal | null, ref: string): Promise<Database> {
  const d = await resolve(app, ref);
  requireRead(p, d);
  return visible(p, d);
}

export async function deleteDatabase(app: App, p: Principal | null, ref: string, expectedVersion?: number): Promise<void> {
  const d = await resolve(app, ref);
  requireManage(p, d);
  if (expectedVersion !== undefined && expectedVersion !== d.schemaVersion) {
    throw new AppError('data_conflict', `The database is at schemaVersion ${d.schemaVersion}, not ${expectedVersion}.`, {
      details: [{ path: 'query.expectedVersion', message: `the database is at ${d.schemaVersion}` }],
    });
  }
  await app.events.write(async () => {
    if (!(await store.deleteDatabase(app.db, d.id))) throw new AppError('data_not_found', `No database ${JSON.stringify(ref)}.`);
    app.events.emit('data:deleted', { id: d.id, name: d.name });
  });
  // The row is gone first, so no new request reaches the database; then it goes.
  await backend(app).drop(d.id);
}

function idempotency(p: Principal | null, endpoint: string, body: { idempotencyKey?: string }): IdempotencyRef | undefined {
  if (!body.idempotencyKey) return undefined;
  return { owner: p?.keyId ?? 'anonymous', key: body.idempotencyKey, hash: requestHash(endpoint, body as Record<string, unknown>) };
}

/**
 * A batch's or a query's answer as its worker serialised it (RecordResult[] or QueryResult): handed
 * to the HTTP layer as bytes, so the daemon's event loop never parses or re-serialises it.
 */
export interface SerialisedAnswer<T> {
  answer: JsonText & { readonly __of?: T };
  replayed: boolean;
}

async function serialised<T>(pending: Promise<EncodedAnswer>): Promise<SerialisedAnswer<T>> {
  const r = await pending;
  return { answer: new JsonText(r.json), replayed: r.replayed };
}

export async function transactions(app: App, p: Principal | null, ref: string, body: { operations: OperationT[]; idempotencyKey?: string }): Promise<SerialisedAnswer<RecordResultT[]>> {
  const d = await resolve(app, ref);
  requireRead(p, d);
  const grants = tableGrants(p, d);
  body.operations.forEach((op, i) => {
    const write = isWriteOp(op);
    if (!canUseTable(write ? grants.write : grants.read, op.table)) throw opError('data_forbidden', i, op, 'table', `this key may not ${write ? 'write' : 'read'} table ${op.table}`);
  });
  return serialised(backend(app).batch(d.id, body.operations, app.clock.now(), idempotency(p, 'transactions', body)));
}

export async function query(app: App, p: Principal | null, ref: string, body: QueryInT): Promise<SerialisedAnswer<QueryResult>> {
  const d = await resolve(app, ref);
  requireRead(p, d);
  const mode = body.mode ?? 'read';
  const grants = tableGrants(p, d);
  if (mode === 'write' && grants.write !== '*' && grants.write.length === 0) throw new AppError('data_forbidden', 'This key has no write grant on this database.');
  const req = { sql: body.sql, params: body.params ?? [], mode, maxRows: body.maxRows ?? LIMITS.maxRows, grants };
  return serialised(backend(app).query(d.id, req, app.clock.now(), idempotency(p, 'query', body)));
}

export async function migrate(app: App, p: Principal | null, ref: string, body: MigrationInT): Promise<{ database: Database; replayed: boolean }> {
  const d = await resolve(app, ref);
  requireManage(p, d);
  const checksum = migrationChecksum(body);
  const r = await backend(app).migrate(d.id, body, checksum, app.clock.now());
  if (!r.replayed) {
    await app.events.write(async () => {
      await store.setSchema(app.db, d.id, r.answer.schema, r.answer.schemaVersion, nowIso(app.clock));
      app.events.emit('data:migrated', { id: d.id, name: d.name, migrationId: body.id, schemaVersion: r.answer.schemaVersion });
    });
  }
  return { database: { ...d, schema: r.answer.schema, schemaVersion: r.answer.schemaVersion }, replayed: r.replayed };
}

export async function listMigrations(app: App, p: Principal | null, ref: string): Promise<MigrationRecord[]> {
  const d = await resolve(app, ref);
  requireRead(p, d);
  return backend(app).migrations(d.id);
}
