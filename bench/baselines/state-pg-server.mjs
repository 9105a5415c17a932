// The raw baseline for the state-on-PostgreSQL scenarios: plain node:http and plain `pg` sending
// the statements svc sends on a PostgreSQL state for GET /api/v1/tasks/{id} and POST
// /api/v1/tasks (seen with log_statement=all), the bearer key checked, the same { ok, data }
// envelope and task JSON, and nothing else (no router, no validation library, no request log).
// A pool of as many connections as svc's state has (POOL_SIZE), each statement awaited on the
// event loop as svc awaits it, and no lock but the event id counter's row, as in svc: the
// comparison is of what svc adds around the same statements. Prints {"port":N} when listening.
import { createServer } from 'node:http';
import { bearer, send, taskInput, toTask } from './respond.mjs';
import pg from 'pg';
// The same time-ordered ids as svc.
import { uuidv7 } from '../../dist/src/lib/ids.js';
import { POOL_SIZE } from '../../dist/src/db/pg/state.js';

const { url, key, pool: size = POOL_SIZE } = JSON.parse(process.argv[2]);
// BIGINT as a number, as svc reads it.
const types = { getTypeParser: (oid, format) => (oid === 20 ? (v) => Number(v) : pg.types.getTypeParser(oid, format)) };
const db = new pg.Pool({ connectionString: url, max: size, types });

const COLUMNS = 'id, title, description, assign_to, mission_id, status, priority, labels, retries, max_retries, side_effects, result, revision_count, lease_expires_at, created_at, updated_at';
// Named, as svc names its statements: each is parsed once per connection.
const GET_ONE = {
  name: 'get_one',
  text: `SELECT ${COLUMNS}, (SELECT COALESCE(json_agg(depends_on ORDER BY position)::text, '[]') FROM task_dependencies WHERE task_id = tasks.id) AS deps FROM tasks WHERE id = $1`,
};
const INSERT_TASK = {
  name: 'insert_task',
  text: `INSERT INTO tasks (id, title, description, assign_to, mission_id, status, priority, labels, max_retries, side_effects, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${COLUMNS}`,
};
// src/events/outbox.ts insertEventsAtCommit: the event id from the meta counter, whose row lock
// orders commits; sent with the COMMIT when no sink has anything to do for the event.
const insertEventAtCommit = (c, name, data, at) => `WITH n AS (
      INSERT INTO meta (key, value) VALUES ('lastEventId', '1')
      ON CONFLICT (key) DO UPDATE SET value = (CAST(meta.value AS BIGINT) + 1)::text RETURNING CAST(value AS BIGINT) AS last)
    INSERT INTO events (id, name, data, created_at) SELECT n.last - 1 + v.ord, v.name, v.data, v.at FROM n, (VALUES (1, ${c.escapeLiteral(name)}, ${c.escapeLiteral(data)}, ${c.escapeLiteral(at)})) AS v(ord, name, data, at) RETURNING id`;
// The webhook fan-out runs in the emitting transaction, its subscriptions read before the event
// takes the counter (src/events/outbox.ts readAhead); with no webhooks it finds none.
const WEBHOOKS = { name: 'webhooks', text: 'SELECT id, events FROM webhooks WHERE enabled = 1' };

async function create(b) {
  const c = await db.connect();
  try {
    await c.query('BEGIN');
    const id = uuidv7();
    const now = new Date().toISOString();
    const labels = [...new Set(b.labels ?? [])];
    const { rows } = await c.query({ ...INSERT_TASK, values: [id, b.title, b.description ?? null, null, null, 'pending', b.priority ?? 'normal', JSON.stringify(labels), 3, 0, now, now] });
    const data = { taskId: id, title: b.title, status: 'pending', assignTo: null, missionId: null };
    // No webhook receives it, so the event goes with the COMMIT, its values literals in the text.
    await c.query(WEBHOOKS);
    const at = new Date().toISOString();
    // No NOTIFY: a daemon alone on its state does not notify (src/events/fan-out.ts).
    await c.query(`${insertEventAtCommit(c, 'task:created', JSON.stringify(data), at)}; COMMIT`);
    // A new task has no dependencies.
    rows[0].deps = '[]';
    return toTask(rows[0]);
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    c.release();
  }
}

const authorized = bearer(key);
const fail = (res) => (err) => send(res, 500, { ok: false, error: { code: 'internal', message: err.message } });

const server = createServer((req, res) => {
  if (!authorized(req)) return send(res, 401, { ok: false, error: { code: 'unauthorized' } });
  const path = req.url.split('?')[0];
  if (req.method === 'GET' && path.startsWith('/api/v1/tasks/')) {
    db.query({ ...GET_ONE, values: [path.slice('/api/v1/tasks/'.length)] }).then(
      ({ rows }) => (rows[0] ? send(res, 200, { ok: true, data: toTask(rows[0]) }) : send(res, 404, { ok: false, error: { code: 'not_found' } })),
      fail(res),
    );
    return;
  }
  if (req.method === 'POST' && path === '/api/v1/tasks') {
    taskInput(req, res, (b) => create(b).then((t) => send(res, 201, { ok: true, data: t }), fail(res)));
    return;
  }
  send(res, 404, { ok: false, error: { code: 'not_found' } });
});
server.keepAliveTimeout = 5_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'));
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void db.end().finally(() => process.exit(0));
});
