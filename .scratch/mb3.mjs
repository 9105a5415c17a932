import { Worker } from 'node:worker_threads';
import { serialize, deserialize } from 'node:v8';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres.mjs';
import pg from 'pg';
import { PgStateDb } from '../dist/src/db/pg/sync.js';
const srv = await startThrowawayPostgres();
const c = new pg.Client({ connectionString: srv.url }); await c.connect();
await c.query('CREATE TABLE t (id text primary key, title text, description text, status text, labels text, created_at text, n bigint)');
await c.query("INSERT INTO t SELECT 'id'||g, 'title '||g, 'desc', 'pending', '[\"x\"]', now()::text, g FROM generate_series(1,10000) g");
const SQL = 'SELECT id, title, description, status, labels, created_at, n FROM t WHERE id = $1';
const CAP = 1 << 18;
const sab = new SharedArrayBuffer(16 + CAP);
const ctl = new Int32Array(sab, 0, 4);
const data = new Uint8Array(sab, 16, CAP);
const w = new Worker(new URL('./mb3-worker.mjs', import.meta.url), { workerData: { sab, url: srv.url } });
let seq = 0;
function call(sql, params) {
  const b = serialize({ sql, params }); data.set(b); Atomics.store(ctl, 2, b.length);
  seq++; Atomics.store(ctl, 0, seq); Atomics.notify(ctl, 0);
  while (Atomics.load(ctl, 1) < seq) Atomics.wait(ctl, 1, seq - 1, 5000);
  return deserialize(data.subarray(0, Atomics.load(ctl, 2)));
}
await new Promise((r) => setTimeout(r, 300));
console.log(call(SQL, ['id5']));
const N = 5000;
function measure(name, fn) {
  const cpu0 = process.cpuUsage(); const t0 = performance.now();
  for (let i = 0; i < N; i++) fn(i);
  const t = performance.now() - t0; const cpu = process.cpuUsage(cpu0);
  console.log(name, 'wall µs/q', (t * 1000 / N).toFixed(1), 'cpu µs/q', ((cpu.user + cpu.system) / N).toFixed(1));
}
for (let round = 0; round < 3; round++) {
  measure('pg+SAB/waitAsync', (i) => call(SQL, ['id' + (i % 10000 + 1)]));
  const b = new PgStateDb({ url: srv.url, statementTimeoutMs: 5000, driver: 'pg' });
  const st = b.prepare('SELECT id, title, description, status, labels, created_at, n FROM t WHERE id = ?'); st.get('id1');
  measure('pg port channel', (i) => st.get('id' + (i % 10000 + 1)));
  b.close();
  const l = new PgStateDb({ url: srv.url, statementTimeoutMs: 5000, driver: 'libpq' });
  const st2 = l.prepare('SELECT id, title, description, status, labels, created_at, n FROM t WHERE id = ?'); st2.get('id1');
  measure('libpq shared', (i) => st2.get('id' + (i % 10000 + 1)));
  l.close();
}
await c.end(); w.terminate(); srv.stop();
