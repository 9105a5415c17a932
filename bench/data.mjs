// npm run bench (data part): application databases through svc beside plain better-sqlite3 behind
// plain node:http. svc (`svc serve`) and the baseline each run in their own process; this process
// only drives load. Method of issue 12 item 10:
//   1. 100,000 rows through POST /transactions in batches of 500 vs the same rows in the same
//      batches inserted by better-sqlite3 (same table DDL, one transaction per batch): rows/s.
//   2. a point query through POST /query vs the same statement behind node:http: requests/s.
//   3. GET /api/v1/tasks latency while a runaway statement runs on a database, vs without one.
// Numbers vary by machine; the ratios are what to watch. Nothing here is asserted by the tests.
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';

const dist = new URL('../dist/src/', import.meta.url);
const SCHEMA = { tables: { items: { columns: { sku: { type: 'text' }, qty: { type: 'integer' }, price: { type: 'number' }, active: { type: 'boolean' } } } } };
const ROWS = Number(process.env.BENCH_DATA_ROWS ?? 100_000);
const BATCH = 500;
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const CONCURRENCY = 16;

// ---- baseline server (runs as its own process: node bench/data.mjs --baseline <file>) ----
async function baseline() {
  const { createTableSql } = await import(new URL('resources/data/ddl.js', dist).href);
  const { uuidv7 } = await import(new URL('lib/ids.js', dist).href);
  const db = new Database(process.argv[3]);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  for (const sql of createTableSql('items', SCHEMA.tables.items)) db.exec(sql);
  const insert = db.prepare('INSERT INTO items (_id, _created_at, _updated_at, sku, qty, price, active) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *');
  const insertMany = db.transaction((rows) => {
    const now = new Date().toISOString();
    return rows.map((r) => insert.get(uuidv7(), now, now, r.sku, r.qty, r.price, r.active ? 1 : 0));
  });
  const point = db.prepare('SELECT * FROM items WHERE _id = ?');
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const b = JSON.parse(body);
      const data = req.url === '/insert' ? [{ rows: insertMany(b.rows), total: b.rows.length, nextOffset: null }] : { rows: [point.get(...b.params)], rowCount: 1, truncated: false };
      const out = JSON.stringify({ ok: true, data });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(out);
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`listening http://127.0.0.1:${server.address().port}\n`));
}

function startProcess(args, cwd, match) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env: { ...process.env, NO_COLOR: '1', SERVICE_API_KEY: '', SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: join(cwd, '.user-config') } });
    let out = '';
    const onData = (c) => {
      out += c;
      const m = match.exec(out);
      if (!m) return;
      // From here on the output (a log line per request) is drained unread: keeping it would
      // make this load generator, not the server, the bottleneck.
      child.stdout.off('data', onData);
      child.stdout.resume();
      out = '';
      resolve({ child, url: m[1] });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (c) => (out += c));
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}: ${out}`)));
  });
}

async function post(pool, path, headers, body) {
  const res = await pool.request({ method: 'POST', path, headers, body: JSON.stringify(body) });
  const text = await res.body.text();
  if (res.statusCode >= 400) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

const row = (i) => ({ sku: `sku-${i}`, qty: i % 100, price: (i % 1000) / 10, active: i % 2 === 0 });

/** ROWS rows in batches of BATCH, 4 batches in flight; returns rows/s and the ids written. */
async function bulk(url, path, headers, wrap) {
  const pool = new Pool(url, { connections: 4 });
  const ids = [];
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < ROWS) {
        const from = next;
        next += BATCH;
        const rows = Array.from({ length: Math.min(BATCH, ROWS - from) }, (_, j) => row(from + j));
        const r = await post(pool, path, headers, wrap(rows));
        for (const x of r.data[0].rows) ids.push(x._id);
      }
    }),
  );
  const s = Number(process.hrtime.bigint() - start) / 1e9;
  await pool.close();
  return { rowsPerSec: ROWS / s, ids };
}

async function load(url, { method = 'GET', path, headers = {}, body, requests = REQUESTS, until }) {
  const pool = new Pool(url, { connections: CONCURRENCY });
  const lat = [];
  let n = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (until ? !until() : n < requests) {
        const i = n++;
        const t = process.hrtime.bigint();
        const res = await pool.request({ method, path, headers, body: typeof body === 'function' ? body(i) : body });
        await res.body.dump();
        if (res.statusCode >= 400) throw new Error(`${method} ${path} answered ${res.statusCode}`);
        lat.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
    }),
  );
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  await pool.close();
  lat.sort((a, b) => a - b);
  return { rps: (lat.length / ms) * 1000, p50: lat[Math.floor(lat.length * 0.5)], p99: lat[Math.floor(lat.length * 0.99)], n: lat.length };
}

const fmt = (r) => `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`;

async function main() {
  const root = mkdtempSync(join(tmpdir(), 'svc-bench-data-'));
  writeFileSync(join(root, 'project.json'), JSON.stringify({ name: 'bench-data' }));
  const svcBin = fileURLToPath(new URL('../bin/svc', import.meta.url));
  const svc = await startProcess([svcBin, 'serve', '--port', '0'], root, /"msg":"listening","url":"([^"]+)"/);
  const base = await startProcess([fileURLToPath(import.meta.url), '--baseline', join(root, 'baseline.sqlite')], root, /listening (http:\S+)/);
  const key = readFileSync(join(root, '.svc', 'local.key'), 'utf8').trim();
  const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const json = { 'content-type': 'application/json' };
  try {
    const created = await fetch(`${svc.url}/api/v1/data`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'bench', schema: SCHEMA }) });
    if (created.status !== 201) throw new Error(`create answered ${created.status}`);
    await fetch(`${svc.url}/api/v1/data`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'spin', schema: SCHEMA }) });

    console.log(`\n${ROWS} rows through /transactions in batches of ${BATCH} (4 in flight)`);
    const s = await bulk(svc.url, '/api/v1/data/bench/transactions', auth, (rows) => ({ operations: [{ op: 'insert', table: 'items', rows }] }));
    const b = await bulk(base.url, '/insert', json, (rows) => ({ rows }));
    console.log(`  svc       ${s.rowsPerSec.toFixed(0).padStart(7)} rows/s`);
    console.log(`  baseline  ${b.rowsPerSec.toFixed(0).padStart(7)} rows/s`);
    console.log(`  ratio     ${(s.rowsPerSec / b.rowsPerSec).toFixed(2)}x (target ≥ 0.5x)`);

    console.log(`\npoint query by _id (${REQUESTS} requests, ${CONCURRENCY} connections)`);
    const sql = 'SELECT * FROM items WHERE _id = ?';
    const sq = await load(svc.url, { method: 'POST', path: '/api/v1/data/bench/query', headers: auth, body: (i) => JSON.stringify({ sql, params: [s.ids[(i * 7919) % s.ids.length]] }) });
    const bq = await load(base.url, { method: 'POST', path: '/query', headers: json, body: (i) => JSON.stringify({ sql, params: [b.ids[(i * 7919) % b.ids.length]] }) });
    console.log(`  svc       ${fmt(sq)}`);
    console.log(`  baseline  ${fmt(bq)}`);
    console.log(`  ratio     ${(sq.rps / bq.rps).toFixed(2)}x (target ≥ 0.5x; the worker hop included)`);

    console.log('\nGET /api/v1/tasks while a runaway statement runs on another database (stopped at 5 s)');
    const calm = await load(svc.url, { path: '/api/v1/tasks', headers: auth, requests: 2000 });
    let stopped = false;
    const runaway = fetch(`${svc.url}/api/v1/data/spin/query`, { method: 'POST', headers: auth, body: JSON.stringify({ sql: 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r' }) }).then((r) => {
      stopped = true;
      return r.status;
    });
    await new Promise((r) => setTimeout(r, 200));
    const busy = await load(svc.url, { path: '/api/v1/tasks', headers: auth, until: () => stopped });
    console.log(`  without    ${fmt(calm)}`);
    console.log(`  during     ${fmt(busy)}  (${busy.n} requests; the runaway answered ${await runaway})`);
  } finally {
    svc.child.kill('SIGTERM');
    base.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--baseline') await baseline();
else await main();
