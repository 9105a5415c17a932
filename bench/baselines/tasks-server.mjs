// The raw baseline for the task scenarios: the simplest correct program doing svc's work with the
// same libraries — plain node:http and better-sqlite3, the same WAL settings, the bearer key
// checked, the same { ok, data } envelope, the same task JSON — and nothing else (no router, no
// validation library, no request log). Run as its own process; prints {"port":N} when listening.
import Database from '../../dist/src/db/sqlite.js';
import { createServer } from 'node:http';
import { bearer, send, taskInput, toTask } from './respond.mjs';
// The same time-ordered ids as svc (random v4 ids would make inserts into the id index slower).
import { uuidv7 } from '../../dist/src/lib/ids.js';

const { db: file, key } = JSON.parse(process.argv[2]);
const db = new Database(file);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');

const COLUMNS =
  'id, title, description, assign_to, mission_id, status, priority, labels, retries, max_retries, side_effects, result, revision_count, created_at, updated_at, (SELECT json_group_array(depends_on) FROM (SELECT depends_on FROM task_dependencies WHERE task_id = tasks.id ORDER BY position)) AS deps';
const getOne = db.prepare(`SELECT ${COLUMNS} FROM tasks WHERE id = ?`);
const listByStatus = db.prepare(`SELECT ${COLUMNS} FROM tasks WHERE status = ? AND id < ? ORDER BY id DESC LIMIT ?`);
const insertTask = db.prepare("INSERT INTO tasks (id, title, description, status, priority, labels, created_at, updated_at) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)");
const insertEvent = db.prepare("INSERT INTO events (name, data, created_at) VALUES ('task:created', ?, ?)");
const create = db.transaction((t) => {
  insertTask.run(t.id, t.title, t.description, t.priority, JSON.stringify(t.labels), t.createdAt, t.updatedAt);
  insertEvent.run(JSON.stringify({ taskId: t.id, title: t.title, status: t.status }), t.createdAt);
});

const authorized = bearer(key);

const server = createServer((req, res) => {
  if (!authorized(req)) return send(res, 401, { ok: false, error: { code: 'unauthorized' } });
  const url = new URL(req.url, 'http://localhost');
  if (req.method === 'GET' && url.pathname.startsWith('/api/v1/tasks/')) {
    const r = getOne.get(url.pathname.slice('/api/v1/tasks/'.length));
    return r ? send(res, 200, { ok: true, data: toTask(r) }) : send(res, 404, { ok: false, error: { code: 'not_found' } });
  }
  if (req.method === 'GET' && url.pathname === '/api/v1/tasks') {
    // One row more than the page tells whether a next page exists (its cursor goes in a header).
    const limit = Number(url.searchParams.get('limit') ?? 50);
    const rows = listByStatus.all(url.searchParams.get('status'), url.searchParams.get('cursor') ?? '~', limit + 1);
    if (rows.length > limit) {
      rows.length = limit;
      res.setHeader('X-Next-Cursor', rows[limit - 1].id);
    }
    return send(res, 200, { ok: true, data: rows.map(toTask) });
  }
  if (req.method === 'POST' && url.pathname === '/api/v1/tasks') {
    taskInput(req, res, (b) => {
      const now = new Date().toISOString();
      const t = {
        id: uuidv7(),
        title: b.title,
        description: b.description ?? null,
        assignTo: null,
        missionId: null,
        dependsOn: [],
        status: 'pending',
        priority: b.priority ?? 'normal',
        labels: b.labels ?? [],
        retries: 0,
        maxRetries: 3,
        sideEffects: false,
        result: null,
        revisionCount: 0,
        createdAt: now,
        updatedAt: now,
      };
      create(t);
      send(res, 201, { ok: true, data: t });
    });
    return;
  }
  send(res, 404, { ok: false, error: { code: 'not_found' } });
});
server.keepAliveTimeout = 5_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'));
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  db.close();
  process.exit(0);
});
