import { stmt, type DB } from '../../db/open.js';

export interface TeamRow {
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
}

export async function listTeams(db: DB): Promise<TeamRow[]> {
  return (await stmt(db, 'SELECT name, description, created_at, updated_at FROM teams ORDER BY name').all()) as TeamRow[];
}

export async function getTeam(db: DB, name: string): Promise<TeamRow | undefined> {
  return (await stmt(db, 'SELECT name, description, created_at, updated_at FROM teams WHERE name = ?').get(name)) as TeamRow | undefined;
}

export async function insertTeam(db: DB, name: string, description: string, now: string): Promise<void> {
  await stmt(db, 'INSERT INTO teams (name, description, created_at, updated_at) VALUES (?, ?, ?, ?)').run(name, description, now, now);
}

/** Agents follow through ON UPDATE CASCADE, inside the caller's transaction. */
export async function renameTeam(db: DB, oldName: string, name: string, now: string): Promise<void> {
  await stmt(db, 'UPDATE teams SET name = ?, updated_at = ? WHERE name = ?').run(name, now, oldName);
}

export async function deleteTeam(db: DB, name: string): Promise<void> {
  await stmt(db, 'DELETE FROM teams WHERE name = ?').run(name);
}
