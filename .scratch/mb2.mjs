import { Worker } from 'node:worker_threads';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres.mjs';
import pg from 'pg';
const srv = await startThrowawayPostgres();
const c = new pg.Client({ connectionString: srv.url }); await c.connect();
await c.query('CREATE TABLE t (id text primary key, title text, description text, status text, labels text, created_at text, n bigint)');
await c.query("INSERT INTO t SELECT 'id'||g, 'title '||g, 'desc', 'pending', '[\"x\"]', now()::text, g FROM generate_series(1,10000) g");
await c.end();
const SQL = 'SELECT id, title, description, status, labels, created_at, n FROM t WHERE id = $1';
const CAP = 1 << 20;
const sab = new SharedArrayBuffer(16 + 2 * CAP);
const ctl = new Int32Array(sab, 0, 4); // 0 req seq, 1 rep seq, 2 req len, 3 rep len
const reqBuf = Buffer.from(sab, 16, CAP), repBuf = Buffer.from(sab, 16 + CAP, CAP);
const w = new Worker(new URL('./mb2-worker.cjs', import.meta.url), { workerData: { sab, CAP, url: srv.url } });
let seq = 0;
function call(sql, params) {
  const n = reqBuf.write(JSON.stringify({ sql, params }), 0, 'utf8');
  Atomics.store(ctl, 2, n);
  seq++;
  Atomics.store(ctl, 0, seq); Atomics.notify(ctl, 0);
  while (Atomics.load(ctl, 1) !== seq) Atomics.wait(ctl, 1, seq - 1, 5000);
  return JSON.parse(repBuf.toString('utf8', 0, Atomics.load(ctl, 3)));
}
await new Promise((r) => setTimeout(r, 300));
console.log(call(SQL, ['id5']));
const N = 5000;
for (let round = 0; round < 3; round++) {
  const cpu0 = process.cpuUsage(); const t0 = performance.now();
  for (let i = 0; i < N; i++) call(SQL, ['id' + (i % 10000 + 1)]);
  const t = performance.now() - t0; const cpu = process.cpuUsage(cpu0);
  console.log('libpq worker', 'wall µs/q', (t * 1000 / N).toFixed(1), 'cpu µs/q (both threads)', ((cpu.user + cpu.system) / N).toFixed(1));
}
w.terminate(); srv.stop();
