import { startThrowawayPostgres } from '../scripts/throwaway-postgres.mjs';
import { PgStateDb } from '../dist/src/db/pg/sync.js';
const srv = await startThrowawayPostgres();
for (let i = 0; i < 5; i++) {
  const b = new PgStateDb({ url: srv.url, statementTimeoutMs: 5000 });
  console.log(i, b.prepare("SELECT 1 AS x").get());
  b.close();
  await new Promise((r) => setTimeout(r, Number(process.argv[2] ?? 0)));
}
await new Promise((r) => setTimeout(r, 500));
console.log('done');
srv.stop();
