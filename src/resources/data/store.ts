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

const toDatabase = (r: Row): Database => ({ id: r.id, name: r.name, schema: JSON.parse(r.schema) as SchemaDefT, schemaVersion: r.schema_version, createdAt: r.created_at });

export function insertDatabase(db: DB, d: Database): void {
  stmt(db, 'INSERT INTO data_databases (id, name, schema, schema_version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(d.id, d.name, JSON.stringify(d.schema), d.schemaVersion, d.createdAt, d.createdAt);
}

export function getById(db: DB, id: string): Database | null {
  const r = stmt(db, `SELECT ${COLUMNS} FROM data_databases WHERE id = ?`).get(id.toLowerCase()) as Row | undefined;
  return r ? toDatabase(r) : null;
}

export function getByName(db: DB, name: string): Database | null {
  const r = stmt(db, `SELECT ${COLUMNS} FROM data_databases WHERE name = ?`).get(name) as Row | undefined;
  return r ? toDatabase(r) : null;
}

/** One page in creation order (ids are v7), after `after`. */
export function listDatabases(db: DB, f: { after?: string; limit: number }): Database[] {
  return (stmt(db, `SELECT ${COLUMNS} FROM data_databases WHERE id > ? ORDER BY id LIMIT ?`).all(f.after ?? '', f.limit) as Row[]).map(toDatabase);
}

export function allIds(db: DB): string[] {
  return (stmt(db, 'SELECT id FROM data_databases').all() as { id: string }[]).map((r) => r.id);
}

export function setSchema(db: DB, id: string, schema: SchemaDefT, version: number): void {
  stmt(db, 'UPDATE data_databases SET schema = ?, schema_version = ?, updated_at = ? WHERE id = ?').run(JSON.stringify(schema), version, new Date().toISOString(), id);
}

export function deleteDatabase(db: DB, id: string): boolean {
  return stmt(db, 'DELETE FROM data_databases WHERE id = ?').run(id).changes > 0;
}
