import { stmt, type DB } from '../../db/open.js';
import type { Task } from './schema.js';
import type { TaskState } from './state.js';

interface Row {
  id: string;
  title: string;
  description: string | null;
  assign_to: string | null;
  mission_id: string | null;
  status: TaskState;
  priority: Task['priority'];
  labels: string;
  retries: number;
  max_retries: number;
  side_effects: number;
  result: string | null;
  revision_count: number;
  lease_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'id, title, description, assign_to, mission_id, status, priority, labels, retries, max_retries, side_effects, result, revision_count, lease_expires_at, created_at, updated_at';

function toTask(r: Row, dependsOn: string[]): Task {
  return {
    id: r.id,
    title: r.title,
    description: r.description,
    assignTo: r.assign_to,
    missionId: r.mission_id,
    dependsOn,
    status: r.status,
    priority: r.priority,
    labels: JSON.parse(r.labels) as string[],
    retries: r.retries,
    maxRetries: r.max_retries,
    sideEffects: r.side_effects === 1,
    result: r.result === null ? null : JSON.parse(r.result),
    revisionCount: r.revision_count,
    leaseExpiresAt: r.lease_expires_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

// A statement given per dialect is a module constant: stmt() caches by the Sql value itself.
const EDGES = {
  sqlite: 'SELECT task_id, depends_on FROM task_dependencies WHERE task_id IN (SELECT value FROM json_each(?)) ORDER BY task_id, position',
  postgres: 'SELECT task_id, depends_on FROM task_dependencies WHERE task_id IN (SELECT json_array_elements_text(?::json)) ORDER BY task_id, position',
};

/** Rows to tasks, with every row's dependencies read in one query. */
async function hydrate(db: DB, rows: Row[]): Promise<Task[]> {
  if (!rows.length) return [];
  return withEdges(rows, (await stmt(db, EDGES).all(edgeKeys(rows))) as Edge[]);
}

type Edge = { task_id: string; depends_on: string };
const edgeKeys = (rows: Row[]): string => JSON.stringify(rows.map((r) => r.id));

function withEdges(rows: Row[], edges: Edge[]): Task[] {
  const deps = new Map<string, string[]>();
  for (const e of edges) {
    let list = deps.get(e.task_id);
    if (!list) deps.set(e.task_id, (list = []));
    list.push(e.depends_on);
  }
  return rows.map((r) => toTask(r, deps.get(r.id) ?? []));
}

/** One statement per task read: the dependencies come along as a JSON array (the read hot path). */
const GET_ONE = {
  sqlite: `SELECT ${COLUMNS}, (SELECT json_group_array(depends_on) FROM (SELECT depends_on FROM task_dependencies WHERE task_id = tasks.id ORDER BY position)) AS deps FROM tasks WHERE id = ?`,
  // json_agg of no rows is NULL, and its result is json: as text, the same JSON.parse reads both.
  postgres: `SELECT ${COLUMNS}, (SELECT COALESCE(json_agg(depends_on ORDER BY position)::text, '[]') FROM task_dependencies WHERE task_id = tasks.id) AS deps FROM tasks WHERE id = ?`,
};

type OneRow = Row & { deps: string };
const oneTask = (row: unknown): Task | null => {
  const r = row as OneRow | undefined;
  return r ? toTask(r, JSON.parse(r.deps) as string[]) : null;
};

/** A task, or null: the statement's promise and one step after it, no async function around it (the read hot path). */
export function getTask(db: DB, id: string): Promise<Task | null> {
  return stmt(db, GET_ONE).get(id).then(oneTask);
}

export interface ListFilter {
  status?: TaskState;
  assignTo?: string;
  missionId?: string;
  /** Only ids below this one (the previous page's last id). */
  before?: string;
  limit: number;
}

/**
 * Newest first by id (uuidv7, so creation order). One statement per combination of filters, each
 * served by an index on (filter column, id) so a page costs the same with 100,000 tasks as with 10.
 */
export async function listTasks(db: DB, f: ListFilter): Promise<Task[]> {
  const q = listQuery(f);
  return await hydrate(db, (await stmt(db, q.sql).all(...q.args)) as Row[]);
}

/** listTasks for a route. */
export async function readTasks(db: DB, f: ListFilter): Promise<Task[]> {
  const q = listQuery(f);
  const rows = (await stmt(db, q.sql).all(...q.args)) as Row[];
  return rows.length ? withEdges(rows, (await stmt(db, EDGES).all(edgeKeys(rows))) as Edge[]) : [];
}

/** The list statement for a filter (exported so a test can check its query plan). */
export function listQuery(f: ListFilter): { sql: string; args: unknown[] } {
  const conditions: [string, unknown][] = [
    ['status = ?', f.status],
    ['assign_to = ?', f.assignTo],
    ['mission_id = ?', f.missionId],
    ['id < ?', f.before],
  ];
  const used = conditions.filter(([, v]) => v !== undefined);
  const where = used.map(([c]) => c);
  const args = used.map(([, v]) => v);
  const sql = `SELECT ${COLUMNS} FROM tasks ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT ?`;
  return { sql, args: [...args, f.limit] };
}

/** All tasks of a mission, oldest first (a mission holds a bounded plan, not an open-ended list). */
export async function listMissionTasks(db: DB, missionId: string): Promise<Task[]> {
  return await hydrate(db, (await stmt(db, `SELECT ${COLUMNS} FROM tasks WHERE mission_id = ? ORDER BY id`).all(missionId)) as Row[]);
}

export async function missionTaskByTitle(db: DB, missionId: string, title: string): Promise<string | null> {
  const r = (await stmt(db, 'SELECT id FROM tasks WHERE mission_id = ? AND title = ? LIMIT 1').get(missionId, title)) as { id: string } | undefined;
  return r?.id ?? null;
}

export interface NewTask {
  id: string;
  title: string;
  description: string | null;
  assignTo: string | null;
  missionId: string | null;
  status: TaskState;
  priority: Task['priority'];
  labels: string[];
  maxRetries: number;
  sideEffects: boolean;
  now: string;
}

/** Inserts the task and answers it as stored (RETURNING: no read after the write), with no dependencies yet. */
export async function insertTask(db: DB, t: NewTask): Promise<Task> {
  const row = (await stmt(
    db,
    `INSERT INTO tasks (id, title, description, assign_to, mission_id, status, priority, labels, max_retries, side_effects, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
  ).get(t.id, t.title, t.description, t.assignTo, t.missionId, t.status, t.priority, JSON.stringify(t.labels), t.maxRetries, t.sideEffects ? 1 : 0, t.now, t.now)) as Row;
  return toTask(row, []);
}

/** The editable fields (never status), written whole from the merged task. */
export async function updateFields(db: DB, t: Task, now: string): Promise<void> {
  await stmt(db, 'UPDATE tasks SET title = ?, description = ?, assign_to = ?, priority = ?, labels = ?, max_retries = ?, side_effects = ?, updated_at = ? WHERE id = ?').run(
    t.title,
    t.description,
    t.assignTo,
    t.priority,
    JSON.stringify(t.labels),
    t.maxRetries,
    t.sideEffects ? 1 : 0,
    now,
    t.id,
  );
}

export interface StatusChange {
  retry: boolean;
  /** JSON text of the new result; undefined keeps the current one. */
  result?: string | null;
  /** Feedback appended to the description on a revision (approval rejected). */
  revision?: string;
  now: string;
}

const SET_STATUS = {
  sqlite: `UPDATE tasks SET status = ?, retries = retries + ?,
       result = CASE WHEN ? THEN ? ELSE result END,
       description = CASE WHEN ? IS NULL THEN description WHEN description IS NULL OR description = '' THEN ? ELSE description || char(10) || char(10) || ? END,
       revision_count = revision_count + ?,
       lease_id = CASE WHEN ? = 'in_progress' THEN lease_id END,
       lease_expires_at = CASE WHEN ? = 'in_progress' THEN lease_expires_at END,
       updated_at = ?
     WHERE id = ? AND status = ?`,
  // PostgreSQL cannot type a bare `? IS NULL`, takes no integer as a condition, and spells char() chr().
  postgres: `UPDATE tasks SET status = ?, retries = retries + ?,
       result = CASE WHEN ?::bigint <> 0 THEN ? ELSE result END,
       description = CASE WHEN ?::text IS NULL THEN description WHEN description IS NULL OR description = '' THEN ? ELSE description || chr(10) || chr(10) || ? END,
       revision_count = revision_count + ?,
       lease_id = CASE WHEN ?::text = 'in_progress' THEN lease_id END,
       lease_expires_at = CASE WHEN ?::text = 'in_progress' THEN lease_expires_at END,
       updated_at = ?
     WHERE id = ? AND status = ?`,
};

/** Compare-and-set on the status: false when the task is no longer in `from`. */
export async function setStatus(db: DB, id: string, from: TaskState, to: TaskState, c: StatusChange): Promise<boolean> {
  const info = await stmt(db, SET_STATUS).run(
    to,
    c.retry ? 1 : 0,
    c.result !== undefined ? 1 : 0,
    c.result ?? null,
    c.revision ?? null,
    c.revision ?? null,
    c.revision ?? null,
    c.revision !== undefined ? 1 : 0,
    to,
    to,
    c.now,
    id,
    from,
  );
  return info.changes === 1;
}

export async function setAssignee(db: DB, id: string, agent: string, now: string): Promise<void> {
  await stmt(db, 'UPDATE tasks SET assign_to = ?, updated_at = ? WHERE id = ?').run(agent, now, id);
}

export async function setMissionId(db: DB, id: string, missionId: string | null, now: string): Promise<void> {
  await stmt(db, 'UPDATE tasks SET mission_id = ?, updated_at = ? WHERE id = ?').run(missionId, now, id);
}

export async function touch(db: DB, id: string, now: string): Promise<void> {
  await stmt(db, 'UPDATE tasks SET updated_at = ? WHERE id = ?').run(now, id);
}

export async function deleteTask(db: DB, id: string): Promise<boolean> {
  return (await stmt(db, 'DELETE FROM tasks WHERE id = ?').run(id)).changes > 0;
}

export async function replaceDependencies(db: DB, id: string, dependsOn: string[]): Promise<void> {
  await stmt(db, 'DELETE FROM task_dependencies WHERE task_id = ?').run(id);
  const ins = stmt(db, 'INSERT INTO task_dependencies (task_id, depends_on, position) VALUES (?, ?, ?)');
  for (const [i, d] of dependsOn.entries()) await ins.run(id, d, i);
}

const MISSING = {
  sqlite: 'SELECT value FROM json_each(?) WHERE value NOT IN (SELECT id FROM tasks)',
  postgres: 'SELECT value FROM json_array_elements_text(?::json) WITH ORDINALITY AS j(value, n) WHERE value NOT IN (SELECT id FROM tasks) ORDER BY n',
};

/** Which of `ids` name no task. */
export async function missingTaskIds(db: DB, ids: string[]): Promise<string[]> {
  if (!ids.length) return []; // most tasks have none: no statement on the create hot path
  const rows = (await stmt(db, MISSING).all(JSON.stringify(ids))) as { value: string }[];
  return rows.map((r) => r.value);
}

/** Dependencies of a task that are not done yet. */
export async function openDependencies(db: DB, id: string): Promise<string[]> {
  const rows = (await stmt(
    db,
    `SELECT d.depends_on AS id FROM task_dependencies d JOIN tasks t ON t.id = d.depends_on
     WHERE d.task_id = ? AND t.status <> 'done' ORDER BY d.position`,
  ).all(id)) as { id: string }[];
  return rows.map((r) => r.id);
}

/** Tasks that depend on `id`. */
export async function dependentsOf(db: DB, id: string): Promise<string[]> {
  return ((await stmt(db, 'SELECT task_id FROM task_dependencies WHERE depends_on = ? ORDER BY task_id').all(id)) as { task_id: string }[]).map((r) => r.task_id);
}

const REACHES = {
  sqlite: `WITH RECURSIVE reach(id) AS (
         SELECT value FROM json_each(?)
         UNION SELECT d.depends_on FROM task_dependencies d JOIN reach r ON d.task_id = r.id
       ) SELECT 1 FROM reach WHERE id = ? LIMIT 1`,
  // Both terms of a recursive union must have one collation: the ids' "C".
  postgres: `WITH RECURSIVE reach(id) AS (
         SELECT value COLLATE "C" FROM json_array_elements_text(?::json) AS j(value)
         UNION SELECT d.depends_on FROM task_dependencies d JOIN reach r ON d.task_id = r.id
       ) SELECT 1 FROM reach WHERE id = ? LIMIT 1`,
};

/** Whether `target` is reachable from any of `from` by following dependencies (a cycle check). */
export async function dependsTransitively(db: DB, from: string[], target: string): Promise<boolean> {
  return (await stmt(db, REACHES).get(JSON.stringify(from), target)) !== undefined;
}

// Leases: a claim's hold on an in_progress task (migration 8).

export interface LeaseRow {
  taskId: string;
  leaseId: string;
  agent: string | null;
  expiresAt: string;
}

export async function getLease(db: DB, id: string): Promise<LeaseRow | null> {
  const r = (await stmt(db, 'SELECT id, lease_id, assign_to, lease_expires_at FROM tasks WHERE id = ? AND lease_id IS NOT NULL').get(id)) as
    | { id: string; lease_id: string; assign_to: string | null; lease_expires_at: string }
    | undefined;
  return r ? { taskId: r.id, leaseId: r.lease_id, agent: r.assign_to, expiresAt: r.lease_expires_at } : null;
}

export async function setLease(db: DB, id: string, leaseId: string, expiresAt: string): Promise<void> {
  await stmt(db, 'UPDATE tasks SET lease_id = ?, lease_expires_at = ? WHERE id = ?').run(leaseId, expiresAt, id);
}

/** Compare-and-set on the lease id: false when the lease is no longer the one named. */
export async function extendLease(db: DB, id: string, leaseId: string, expiresAt: string): Promise<boolean> {
  return (await stmt(db, 'UPDATE tasks SET lease_expires_at = ? WHERE id = ? AND lease_id = ?').run(expiresAt, id, leaseId)).changes === 1;
}

/** Ends a lease that ran out: the task goes back to pending with no assignee (compare-and-set). */
export async function releaseLease(db: DB, id: string, leaseId: string, now: string): Promise<boolean> {
  return (
    (
      await stmt(
        db,
        `UPDATE tasks SET status = 'pending', assign_to = NULL, lease_id = NULL, lease_expires_at = NULL, updated_at = ?
       WHERE id = ? AND lease_id = ? AND status = 'in_progress'`,
      ).run(now, id, leaseId)
    ).changes === 1
  );
}

/** Leases expired by `now`, oldest first (at most `limit`), plus the next one to expire. */
export async function expiringLeases(db: DB, now: string, limit: number): Promise<{ id: string; expiresAt: string }[]> {
  const due = (await stmt(db, 'SELECT id, lease_expires_at AS expiresAt FROM tasks WHERE lease_expires_at IS NOT NULL AND lease_expires_at <= ? ORDER BY lease_expires_at LIMIT ?').all(
    now,
    limit,
  )) as { id: string; expiresAt: string }[];
  const next = (await stmt(db, 'SELECT id, lease_expires_at AS expiresAt FROM tasks WHERE lease_expires_at IS NOT NULL AND lease_expires_at > ? ORDER BY lease_expires_at LIMIT 1').get(now)) as
    | { id: string; expiresAt: string }
    | undefined;
  return next ? [...due, next] : due;
}

/**
 * Ids of the oldest tasks in `status` with `priority`, after the id `after`, that `agent` may claim:
 * unassigned or assigned to it, and with every dependency done. Walks the (status, priority, id) index.
 */
/**
 * Candidates for the next claim. On PostgreSQL (inside the claiming transaction) tasks another
 * agent is claiming right now are passed over, not waited for (SKIP LOCKED), and those returned
 * stay locked for this claim until it commits.
 */
export async function claimableTasks(db: DB, status: 'pending' | 'assigned', priority: Task['priority'], agent: string, after: string, limit: number): Promise<string[]> {
  const rows = (await stmt(db, CLAIMABLE).all(status, priority, after, agent, limit)) as { id: string }[];
  return rows.map((r) => r.id);
}

const CLAIMABLE_SQL = `SELECT t.id FROM tasks t
     WHERE t.status = ? AND t.priority = ? AND t.id > ? AND (t.assign_to IS NULL OR t.assign_to = ?)
       AND NOT EXISTS (SELECT 1 FROM task_dependencies d JOIN tasks x ON x.id = d.depends_on WHERE d.task_id = t.id AND x.status <> 'done')
     ORDER BY t.id LIMIT ?`;
const CLAIMABLE = { sqlite: CLAIMABLE_SQL, postgres: `${CLAIMABLE_SQL} FOR UPDATE OF t SKIP LOCKED` };

// Comments: notes on a task's activity (migration 8).

export interface CommentRow {
  id: string;
  taskId: string;
  author: string;
  body: string;
  createdAt: string;
}

export async function insertComment(db: DB, c: CommentRow): Promise<void> {
  await stmt(db, 'INSERT INTO task_comments (id, task_id, author, body, created_at) VALUES (?, ?, ?, ?, ?)').run(c.id, c.taskId, c.author, c.body, c.createdAt);
}

/** A task's comments, newest first, below the `before` id when given (one plain statement each way). */
export async function listComments(db: DB, taskId: string, before: string | undefined, limit: number): Promise<CommentRow[]> {
  const cols = 'SELECT id, task_id AS taskId, author, body, created_at AS createdAt FROM task_comments';
  return (
    before === undefined
      ? await stmt(db, `${cols} WHERE task_id = ? ORDER BY id DESC LIMIT ?`).all(taskId, limit)
      : await stmt(db, `${cols} WHERE task_id = ? AND id < ? ORDER BY id DESC LIMIT ?`).all(taskId, before, limit)
  ) as CommentRow[];
}

/** in_progress → assigned, the holder kept as assignee and the lease gone: a run let go of its claim. */
export async function releaseToAssigned(db: DB, id: string, leaseId: string, now: string): Promise<boolean> {
  return (
    (
      await stmt(
        db,
        `UPDATE tasks SET status = 'assigned', lease_id = NULL, lease_expires_at = NULL, updated_at = ?
       WHERE id = ? AND lease_id = ? AND status = 'in_progress'`,
      ).run(now, id, leaseId)
    ).changes === 1
  );
}

/** Ids of tasks assigned to `agent`, pending or assigned, with every dependency done (oldest first). */
export async function readyTasksOf(db: DB, agent: string, limit: number): Promise<string[]> {
  const rows = (await stmt(
    db,
    `SELECT t.id FROM tasks t
     WHERE t.assign_to = ? AND t.status IN ('pending', 'assigned')
       AND NOT EXISTS (SELECT 1 FROM task_dependencies d JOIN tasks x ON x.id = d.depends_on WHERE d.task_id = t.id AND x.status <> 'done')
     ORDER BY t.id LIMIT ?`,
  ).all(agent, limit)) as { id: string }[];
  return rows.map((r) => r.id);
}
