import { startThrowawayPostgres } from '../scripts/throwaway-postgres.mjs';
import pg from 'pg';
const s = await startThrowawayPostgres();
const c = new pg.Client({ connectionString: s.url }); await c.connect();
const sql = "SELECT string_agg(repeat('x', 1000), '') AS s FROM generate_series(1, 300000)";
const wrapped = (src) => `WITH "_svc_q" AS (${sql}\n) SELECT "_svc_s".* FROM (SELECT count(*) OVER () AS "_svc_n", row_number() OVER w AS "_svc_i", sum(pg_column_size("_svc_q".*)) OVER w AS "_svc_b", "_svc_q".* FROM ${src} WINDOW w AS (ROWS UNBOUNDED PRECEDING)) AS "_svc_s" WHERE CASE WHEN "_svc_i" <= 200 THEN "_svc_b" < 2000000 ELSE false END`;
let t = Date.now(); await c.query(wrapped('(SELECT * FROM "_svc_q" LIMIT 201) AS "_svc_q"')); console.log('wrapped read', Date.now() - t);
t = Date.now(); await c.query(`WITH "_svc_q" AS (${sql}) SELECT "_svc_q".*, pg_column_size("_svc_q".*) AS b FROM (SELECT * FROM "_svc_q" LIMIT 201) AS "_svc_q"`); console.log('no window', Date.now() - t);
await c.end(); s.stop();
