import { stmt, type DB } from '../../db/open.js';
import type { Parameter } from './schema.js';

export interface PlaybookRecord {
  name: string;
  description: string | null;
  parameters: Parameter[];
  mission: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  name: string;
  description: string | null;
  parameters: string;
  mission: string;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'name, description, parameters, mission, created_at, updated_at';

const toRecord = (r: Row): PlaybookRecord => ({
  name: r.name,
  description: r.description,
  parameters: JSON.parse(r.parameters) as Parameter[],
  mission: JSON.parse(r.mission) as Record<string, unknown>,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function getPlaybook(db: DB, name: string): Promise<PlaybookRecord | null> {
  const r = (await stmt(db, `SELECT ${COLUMNS} FROM playbooks WHERE name = ?`).get(name)) as Row | undefined;
  return r ? toRecord(r) : null;
}

/** By name: templates are few, so the list is whole, not paged. */
export async function listPlaybooks(db: DB): Promise<PlaybookRecord[]> {
  return ((await stmt(db, `SELECT ${COLUMNS} FROM playbooks ORDER BY name`).all()) as Row[]).map(toRecord);
}

export async function insertPlaybook(db: DB, p: PlaybookRecord): Promise<void> {
  await stmt(db, `INSERT INTO playbooks (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`).run(p.name, p.description, JSON.stringify(p.parameters), JSON.stringify(p.mission), p.createdAt, p.updatedAt);
}

export async function updatePlaybook(db: DB, p: PlaybookRecord): Promise<void> {
  await stmt(db, 'UPDATE playbooks SET description = ?, parameters = ?, mission = ?, updated_at = ? WHERE name = ?').run(
    p.description,
    JSON.stringify(p.parameters),
    JSON.stringify(p.mission),
    p.updatedAt,
    p.name,
  );
}

export async function deletePlaybook(db: DB, name: string): Promise<boolean> {
  return (await stmt(db, 'DELETE FROM playbooks WHERE name = ?').run(name)).changes > 0;
}
