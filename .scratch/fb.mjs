import { startThrowawayPostgres } from '../scripts/throwaway-postgres.mjs';
import { PgStateDb } from '../dist/src/db/pg/sync.js';
const srv = await startThrowawayPostgres();
for (const driver of ['pg', 'auto']) {
  const b = new PgStateDb({ url: srv.url, statementTimeoutMs: 5000, driver });
  try { console.log(driver, b.prepare("SELECT 1 AS x").get(), b.driver); } catch (e) { console.log(driver, 'ERR', e.message); }
  b.close();
}
srv.stop();
