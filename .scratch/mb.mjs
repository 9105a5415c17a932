import { createRequire } from 'node:module';
import pg from 'pg';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres.mjs';
import { PgStateDb } from '../dist/src/db/pg/sync.js';
const require = createRequire('/tmp/lpq/');
const Libpq = require('/tmp/lpq/node_modules/libpq');
const srv = await startThrowawayPostgres();
const c = new pg.Client({ connectionString: srv.url }); await c.connect();
await c.query('CREATE TABLE t (id text primary key, title text, description text, status text, labels text, created_at text)');
await c.query("INSERT INTO t SELECT 'id'||g, 'title '||g, 'desc', 'pending', '[\"x\"]', now()::text FROM generate_series(1,10000) g");
const N = 5000;
const SQL = 'SELECT id, title, description, status, labels, created_at FROM t WHERE id = $1';
function measure(name, fn) {
  const cpu0 = process.cpuUsage(); const t0 = performance.now();
  for (let i = 0; i < N; i++) fn(i);
  const t = performance.now() - t0; const cpu = process.cpuUsage(cpu0);
  console.log(name, 'wall µs/q', (t * 1000 / N).toFixed(1), 'cpu µs/q', ((cpu.user + cpu.system) / N).toFixed(1));
}
async function measureAsync(name, fn) {
  const cpu0 = process.cpuUsage(); const t0 = performance.now();
  for (let i = 0; i < N; i++) await fn(i);
  const t = performance.now() - t0; const cpu = process.cpuUsage(cpu0);
  console.log(name, 'wall µs/q', (t * 1000 / N).toFixed(1), 'cpu µs/q', ((cpu.user + cpu.system) / N).toFixed(1));
}
for (let round = 0; round < 2; round++) {
  await measureAsync('pg async', (i) => c.query({ name: 'q', text: SQL, values: ['id' + (i % 10000 + 1)] }));
  const b = new PgStateDb({ url: srv.url, statementTimeoutMs: 5000 });
  const st = b.prepare('SELECT id, title, description, status, labels, created_at FROM t WHERE id = ?');
  st.get('id1');
  measure('bridge', (i) => st.get('id' + (i % 10000 + 1)));
  b.close();
  const l = new Libpq(); l.connectSync(srv.url);
  l.prepare('q', SQL, 1);
  measure('libpq sync', (i) => { l.execPrepared('q', ['id' + (i % 10000 + 1)]); const n = l.ntuples(); const row = {}; for (let f = 0; f < l.nfields(); f++) row[l.fname(f)] = l.getvalue(0, f); if (l.resultStatus() !== 'PGRES_TUPLES_OK') throw new Error(l.errorMessage()); });
  l.finish();
}
await c.end(); srv.stop();
