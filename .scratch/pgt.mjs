import { startThrowawayPostgres } from '/work/main/scripts/throwaway-postgres.mjs';
import pg from 'pg';
const s = await startThrowawayPostgres();
const c = new pg.Client({ connectionString: s.url }); await c.connect();
const q1 = "SELECT length(string_agg(repeat('x', 1000), '')) AS n FROM generate_series(1, 300000)";
let t = Date.now(); await c.query(q1); console.log('agg+length', Date.now() - t);
t = Date.now(); await c.query("WITH q AS (SELECT string_agg(repeat('x', 1000), '') AS s FROM generate_series(1, 300000)) SELECT pg_column_size(q.*) FROM q"); console.log('cte+colsize', Date.now() - t);
t = Date.now(); await c.query("WITH q AS (SELECT string_agg(repeat('x', 1000), '') AS s FROM generate_series(1, 300000)) SELECT sum(pg_column_size(q.*)) OVER (ROWS UNBOUNDED PRECEDING) FROM q"); console.log('cte+window', Date.now() - t);
await c.end(); s.stop();
