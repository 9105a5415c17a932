import { stmt, type DB } from '../../db/open.js';

export interface TeamRow {
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
}

export function listTeams(db: DB): TeamRow[] {
  return stmt(db, 'SELECT name, description, created_at, updated_at FROM teams ORDER BY name').all() as TeamRow[];
}

export function getTeam(db: DB, name: string): TeamRow | undefined {
  return stmt(db, 'SELECT name, description, created_at, updated_at FROM teams WHERE name = ?').get(name) as TeamRow | undefined;
}

export function insertTeam(db: DB, name: string, description: string, now: string): void {
  stmt(db, 'INSERT INTO teams (name, description, created_at, updated_at) VALUES (?, ?, ?, ?)').run(name, description, now, now);
}

/** Agents follow through ON UPDATE CASCADE, inside the caller's transaction. */
export function renameTeam(db: DB, oldName: string, name: string, now: string): void {
  stmt(db, 'UPDATE teams SET name = ?, updated_at = ? WHERE name = ?').run(name, now, oldName);
}

export function deleteTeam(db: DB, name: string): void {
  stmt(db, 'DELETE FROM teams WHERE name = ?').run(name);
}
