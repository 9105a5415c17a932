// npm run bench: each scenario runs through svc and beside its raw baseline (plain node:http with
// plain better-sqlite3, driven by plain undici) in the same process and run, and prints the ratio.
// Numbers vary by machine; the ratio is what to watch. Nothing here is asserted by the tests.
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';

// `npm run bench -- webhooks`: the webhook delivery scenario (bench/webhooks.mjs) alone.
if (process.argv[2] === 'webhooks') {
  await import('./webhooks.mjs');
  process.exit(0);
}

const dist = new URL('../dist/src/', import.meta.url);
const { startDaemon } = await import(new URL('daemon.js', dist).href);
const { createLogger } = await import(new URL('kernel/log.js', dist).href);
const { uuidv7 } = await import(new URL('lib/ids.js', dist).href);
const { readLocalKey } = await import(new URL('state-dir.js', dist).href);

const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const CONCURRENCY = 16;

async function load(url, { method = 'GET', path, headers = {}, body }) {
  const pool = new Pool(url, { connections: CONCURRENCY, pipelining: 1 });
  const lat = [];
  let next = 0;
  const worker = async () => {
    while (next < REQUESTS) {
      const i = next++;
      const t = process.hrtime.bigint();
      const res = await pool.request({ method, path: typeof path === 'function' ? path(i) : path, headers, body: typeof body === 'function' ? body(i) : body });
      await res.body.dump();
      if (res.statusCode >= 400) throw new Error(`${method} ${path} answered ${res.statusCode}`);
      lat.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  await pool.close();
  lat.sort((a, b) => a - b);
  return { rps: (REQUESTS / ms) * 1000, p50: lat[Math.floor(lat.length * 0.5)], p99: lat[Math.floor(lat.length * 0.99)] };
}

function baselineServer(handler) {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const out = JSON.stringify({ ok: true, data: handler(req, body) });
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
      res.end(out);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) })));
}

const fmt = (r) => `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`;
function report(name, svc, base) {
  console.log(`\n${name}`);
  console.log(`  svc       ${fmt(svc)}`);
  console.log(`  baseline  ${fmt(base)}`);
  console.log(`  ratio     ${(svc.rps / base.rps).toFixed(2)}x the baseline's throughput`);
}

const root = mkdtempSync(join(tmpdir(), 'svc-bench-'));
writeFileSync(join(root, 'project.json'), JSON.stringify({ name: 'bench' }));
const daemon = await startDaemon({ root, host: '127.0.0.1', port: 0, env: { SVC_VAULT_KEY: 'ab'.repeat(32) }, log: createLogger(() => {}) });
const key = readLocalKey(root);
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const db = daemon.app.db;

console.log(`seeding ${TASKS} tasks…`);
const now = new Date().toISOString();
const insert = db.prepare(`INSERT INTO tasks (id, title, description, status, priority, labels, created_at, updated_at) VALUES (?, ?, ?, ?, 'normal', '[]', ?, ?)`);
const states = ['pending', 'assigned', 'in_progress', 'done'];
db.transaction(() => {
  for (let i = 0; i < TASKS; i++) insert.run(uuidv7(), `task ${i}`, 'seeded', states[i % 4], now, now);
})();
for (let i = 0; i < 20; i++) await fetch(`${daemon.url}/api/v1/agents`, { method: 'POST', headers: auth, body: JSON.stringify({ name: `agent-${i}`, role: 'bench' }) });

// Baselines read the same database file through their own connection.
const raw = new Database(join(root, '.svc', 'state.sqlite'));
const listPending = raw.prepare("SELECT * FROM tasks WHERE status = 'pending' ORDER BY id DESC LIMIT 50");
const listAgents = raw.prepare('SELECT * FROM agents ORDER BY name');
const insertRaw = raw.prepare(`INSERT INTO tasks (id, title, status, priority, labels, created_at, updated_at) VALUES (?, ?, 'pending', 'normal', '[]', ?, ?)`);

{
  const base = await baselineServer(() => listPending.all());
  report(`GET /api/v1/tasks?status=pending&limit=50 with ${TASKS} tasks`, await load(daemon.url, { path: '/api/v1/tasks?status=pending&limit=50', headers: auth }), await load(base.url, { path: '/' }));
  await base.close();
}
{
  const base = await baselineServer(() => listAgents.all());
  report('GET /api/v1/agents (20 agents)', await load(daemon.url, { path: '/api/v1/agents', headers: auth }), await load(base.url, { path: '/' }));
  await base.close();
}
{
  const base = await baselineServer((_req, body) => {
    const t = JSON.parse(body);
    const ts = new Date().toISOString();
    insertRaw.run(uuidv7(), t.title, ts, ts);
    return t;
  });
  const body = (i) => JSON.stringify({ title: `bench task ${i}` });
  report('POST /api/v1/tasks (one transaction + outbox event each)', await load(daemon.url, { method: 'POST', path: '/api/v1/tasks', headers: auth, body }), await load(base.url, { method: 'POST', path: '/', headers: { 'content-type': 'application/json' }, body }));
  await base.close();
}
{
  const t = process.hrtime.bigint();
  for (let i = 0; i < 1000; i++) listPending.all();
  const rawMs = Number(process.hrtime.bigint() - t) / 1e6 / 1000;
  console.log(`\nplain better-sqlite3, the same page query without HTTP: ${rawMs.toFixed(3)} ms per query`);
}
console.log(`\nmemory: rss ${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB, heap ${(process.memoryUsage().heapUsed / 1048576).toFixed(0)} MiB (svc and baselines in one process)`);

raw.close();
await daemon.close();
rmSync(root, { recursive: true, force: true });
