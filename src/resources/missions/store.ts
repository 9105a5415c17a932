import { stmt, type DB } from '../../db/open.js';
import type { MissionRecord, MissionState } from './schema.js';

interface Row {
  id: string;
  name: string;
  goal: string | null;
  status: MissionState;
  deadline: string | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'id, name, goal, status, deadline, created_at, updated_at';

const toRecord = (r: Row): MissionRecord => ({
  id: r.id,
  name: r.name,
  goal: r.goal,
  status: r.status,
  deadline: r.deadline,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function getMission(db: DB, id: string): Promise<MissionRecord | null> {
  const r = (await stmt(db, `SELECT ${COLUMNS} FROM missions WHERE id = ?`).get(id)) as Row | undefined;
  return r ? toRecord(r) : null;
}

/** Newest first by id (uuidv7); (status, id) is indexed so a filtered page needs no sort. */
export async function listMissions(db: DB, f: { status?: MissionState; before?: string; limit: number }): Promise<MissionRecord[]> {
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.status !== undefined) where.push('status = ?'), args.push(f.status);
  if (f.before !== undefined) where.push('id < ?'), args.push(f.before);
  const sql = `SELECT ${COLUMNS} FROM missions ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT ?`;
  return ((await stmt(db, sql).all(...args, f.limit)) as Row[]).map(toRecord);
}

export async function insertMission(db: DB, m: MissionRecord): Promise<void> {
  await stmt(db, `INSERT INTO missions (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`).run(m.id, m.name, m.goal, m.status, m.deadline, m.createdAt, m.updatedAt);
}

/** Compare-and-set on the status: false when the mission is no longer in `from`. */
export async function setStatus(db: DB, id: string, from: MissionState, to: MissionState, now: string): Promise<boolean> {
  return (await stmt(db, 'UPDATE missions SET status = ?, updated_at = ? WHERE id = ? AND status = ?').run(to, now, id, from)).changes === 1;
}

export async function deleteMission(db: DB, id: string): Promise<boolean> {
  return (await stmt(db, 'DELETE FROM missions WHERE id = ?').run(id)).changes > 0;
}
