import { stmt, type DB } from '../../db/open.js';
import type { Database, SchemaDefT } from './schema.js';

// The registry of application databases in the state DB (migration 7): name → id, and a copy of
// each database's schema and version for listing. The database file holds the authoritative copy
// (written in the migration's own transaction); the registry follows it (see service.reconcile).

interface Row {
  id: string;
  name: string;
  schema: string;
  schema_version: number;
  created_at: string;
}

const COLUMNS = 'id, name, schema, schema_version, created_at';

const toDatabase = (r: Row): Database => Object.freeze({ id: r.id, name: r.name, schema: JSON.parse(r.schema) as SchemaDefT, schemaVersion: r.schema_version, createdAt: r.created_at });

/**
 * Every record request resolves its database by name or id first, and reading and parsing the
 * row was a sixth of the daemon's CPU on a point query. Found rows are kept per state DB (so two
 * daemons in one process never share one), frozen, and the whole cache is dropped by every write
 * below: writes are rare (create, delete, migrate), and dropping rather than updating stays right
 * when the write's transaction rolls back. Nothing read inside a transaction is kept either (it
 * may not commit). Misses are not kept, so unknown names cannot fill it.
 */
const found = new WeakMap<DB, Map<string, Database>>();
const CACHED_MAX = 1024;

async function cached(db: DB, key: string, load: () => Promise<Row | undefined>): Promise<Database | null> {
  let m = found.get(db);
  if (!m) found.set(db, (m = new Map()));
  const hit = m.get(key);
  if (hit) return hit;
  const r = await load();
  if (!r) return null;
  if (db.inTransaction) return toDatabase(r);
  if (m.size >= CACHED_MAX) m.clear();
  const d = toDatabase(r);
  m.set(key, d);
  return d;
}

const forget = (db: DB): void => found.get(db)?.clear();

export async function insertDatabase(db: DB, d: Database): Promise<void> {
  forget(db);
  await stmt(db, 'INSERT INTO data_databases (id, name, schema, schema_version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(
    d.id,
    d.name,
    JSON.stringify(d.schema),
    d.schemaVersion,
    d.createdAt,
    d.createdAt,
  );
}

export function getById(db: DB, id: string): Promise<Database | null> {
  const lower = id.toLowerCase();
  return cached(db, `id:${lower}`, async () => (await stmt(db, `SELECT ${COLUMNS} FROM data_databases WHERE id = ?`).get(lower)) as Row | undefined);
}

export function getByName(db: DB, name: string): Promise<Database | null> {
  return cached(db, `name:${name}`, async () => (await stmt(db, `SELECT ${COLUMNS} FROM data_databases WHERE name = ?`).get(name)) as Row | undefined);
}

/** One page in creation order (ids are v7), after `after`. */
export async function listDatabases(db: DB, f: { after?: string; limit: number }): Promise<Database[]> {
  return ((await stmt(db, `SELECT ${COLUMNS} FROM data_databases WHERE id > ? ORDER BY id LIMIT ?`).all(f.after ?? '', f.limit)) as Row[]).map(toDatabase);
}

export async function allIds(db: DB): Promise<string[]> {
  return ((await stmt(db, 'SELECT id FROM data_databases').all()) as { id: string }[]).map((r) => r.id);
}

export async function setSchema(db: DB, id: string, schema: SchemaDefT, version: number, now: string): Promise<void> {
  forget(db);
  await stmt(db, 'UPDATE data_databases SET schema = ?, schema_version = ?, updated_at = ? WHERE id = ?').run(JSON.stringify(schema), version, now, id);
}

export async function deleteDatabase(db: DB, id: string): Promise<boolean> {
  forget(db);
  return (await stmt(db, 'DELETE FROM data_databases WHERE id = ?').run(id)).changes > 0;
}
