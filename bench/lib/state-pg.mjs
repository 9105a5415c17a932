// The state-on-PostgreSQL scenarios' common part: one throwaway PostgreSQL, a database per side
// (its schema made by a real daemon start, as seededProject does for SQLite), seeded tasks, and
// the read and write loads of read.mjs and write.mjs.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startThrowawayPostgres } from '../../scripts/throwaway-postgres.mjs';
import { uuidv7 } from '../../dist/src/lib/ids.js';

/** As read.mjs: a 10,000-task state, 1,000 of its ids looked up. */
export const TASKS = 10_000;
export const CONNECTIONS = 32;
export const SECONDS = 3;

export async function startStatePostgres(h) {
  const server = await startThrowawayPostgres();
  if ('skip' in server) throw new Error(server.skip);
  h.onCleanup(() => server.stop());
  // Every daemon on one state needs the same vault key.
  const vaultKey = randomBytes(32).toString('base64');
  return {
    /** A new empty database; its URL. */
    async database(name) {
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      return server.url.replace(/\/postgres$/, `/${name}`);
    },
    env: (url) => ({ SVC_STATE_URL: url, SVC_VAULT_KEY: vaultKey }),
  };
}

/**
 * Seeds a state database directly (no daemon on it): `count` tasks with a task:created event each,
 * the event counter set past them, as harness.seedTasks does for SQLite. Returns the ids.
 */
export async function seedTasksPg(url, count) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const states = ['pending', 'assigned', 'in_progress', 'done'];
  const base = Date.now() - count;
  const ids = [];
  const rows = { id: [], title: [], status: [], at: [], data: [] };
  for (let i = 0; i < count; i++) {
    // svc's own ids (monotonic), so seeded ids sort in creation order as the daemon's do.
    const id = uuidv7(base + i);
    ids.push(id);
    rows.id.push(id);
    rows.title.push(`task ${i}`);
    rows.status.push(states[i % states.length]);
    rows.at.push(new Date(base + i).toISOString());
    rows.data.push(JSON.stringify({ taskId: id, title: `task ${i}`, status: states[i % states.length] }));
  }
  await c.query('BEGIN');
  const last = Number((await c.query("SELECT COALESCE((SELECT CAST(value AS BIGINT) FROM meta WHERE key = 'lastEventId'), 0) AS n")).rows[0].n);
  await c.query(
    `INSERT INTO tasks (id, title, description, status, priority, labels, created_at, updated_at)
     SELECT id, title, 'seeded by bench', status, 'normal', '["bench"]', at, at FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS t(id, title, status, at)`,
    [rows.id, rows.title, rows.status, rows.at],
  );
  await c.query(`INSERT INTO events (id, name, data, created_at) SELECT $1::bigint + n, 'task:created', data, at FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS e(data, at, n)`, [
    last,
    rows.data,
    rows.at,
  ]);
  await c.query("INSERT INTO meta (key, value) VALUES ('lastEventId', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", [String(last + count)]);
  await c.query('COMMIT');
  await c.query('VACUUM ANALYZE tasks');
  await c.end();
  return ids;
}

/** A state database with its schema made by a real first start, then seeded. */
export async function seededStateDb(h, pgs, name, tasks) {
  const url = await pgs.database(name);
  const first = await h.startSvc(h.makeProject(), { env: pgs.env(url) });
  await first.stop();
  const ids = await seedTasksPg(url, tasks);
  return { url, ids };
}

/** read.mjs's and write.mjs's loads, with `connections` of their own. */
export function readLoad(key, ids, connections = CONNECTIONS) {
  return {
    paths: ids.filter((_, i) => i % 10 === 0).map((id) => `/api/v1/tasks/${id}`),
    headers: { authorization: `Bearer ${key}` },
    connections,
    seconds: SECONDS,
  };
}
export function writeLoad(key, connections = CONNECTIONS) {
  return {
    method: 'POST',
    path: '/api/v1/tasks',
    bodies: Array.from({ length: 64 }, (_, i) => JSON.stringify({ title: `bench task ${i}`, description: 'written by the bench', labels: ['bench'] })),
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    connections,
    seconds: SECONDS,
  };
}

/** Reads, then writes, against one server; the metrics of both. */
export async function readThenWrite(h, server, key, ids) {
  const r = await h.loadServer(server, readLoad(key, ids));
  const w = await h.loadServer(server, writeLoad(key));
  return metrics(r, w);
}

export function metrics(r, w) {
  return {
    readRps: r.rps,
    readP99: r.p99,
    readCpuUs: r.cpuUs,
    writeRps: w.rps,
    writeP99: w.p99,
    writeCpuUs: w.cpuUs,
    errors: r.errors + r.non2xx + w.errors + w.non2xx,
  };
}
