// Issue 20 item 8: the PostgreSQL provider. 100,000 rows through /api/v1/data/{db}/transactions in
// batches of 500, then a point query through /query, each beside plain `pg` doing the same
// statements over a pool of the same size behind plain node:http (baselines/data-pg-server.mjs).
// One throwaway PostgreSQL (scripts/throwaway-postgres.mjs) serves both sides, in separate schemas.
import { startThrowawayPostgres } from '../../scripts/throwaway-postgres.mjs';
import { createDatabase, loadTree, row, TABLE } from '../lib/data.mjs';

const BATCH = 500;
const ROWS = 100_000;
/** Long enough for 100,000 rows at the rates seen (about 19,000 rows/s through svc). */
const WRITE_SECONDS = 6;
/** svc's pool for one database (data.pool.perDatabase), given to the baseline too. */
const POOL = 4;
const SQL = 'SELECT * FROM items WHERE _id = $1';

export default {
  name: 'data-pg',
  order: 72,
  title: `PostgreSQL provider: ${ROWS.toLocaleString('en-US')} rows in batches of ${BATCH}, then a point query, pool of ${POOL} a side`,
  async setup(h) {
    const server = await startThrowawayPostgres();
    if ('skip' in server) throw new Error(server.skip);
    h.onCleanup(() => server.stop());
    const root = h.makeProject({ data: { provider: 'postgres', url: server.url, pool: { perDatabase: POOL } } });
    const svc = await h.startSvc(root);
    await createDatabase(svc, 'bench');
    const base = await h.startBaseline('data-pg-server.mjs', { url: server.url, key: svc.key, table: TABLE, pool: POOL });
    const headers = { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' };
    const batch = (b) => Array.from({ length: BATCH }, (_, j) => row(b * BATCH + j));
    const svcBodies = Array.from({ length: 2 }, (_, b) => JSON.stringify({ operations: [{ op: 'insert', table: 'items', rows: batch(b) }] }));
    const baseBodies = Array.from({ length: 2 }, (_, b) => JSON.stringify({ rows: batch(b) }));
    // Ids to look up: the first batch's, read back from each side.
    const ids = async (srv, path, body) => {
      const res = await fetch(srv.url + path, { method: 'POST', headers, body });
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
      return (await res.json()).data[0].rows.map((r) => r._id);
    };
    const svcIds = await ids(svc, '/api/v1/data/bench/transactions', svcBodies[0]);
    const baseIds = await ids(base, '/insert', baseBodies[0]);
    const side = (srv, insertPath, bodies, queryPath, idList, queryBody) => async () => {
      // Timed, not counted: the load generator reports whole seconds (see data-batch.mjs).
      const w = await loadTree(h, srv, { method: 'POST', path: insertPath, bodies, headers, connections: POOL, seconds: WRITE_SECONDS }, BATCH);
      const r = await loadTree(h, srv, { method: 'POST', path: queryPath, bodies: idList.map(queryBody), headers, connections: 32, seconds: 3 });
      return { rowsPerSec: w.rps * BATCH, rows: w.requests * BATCH, batchP99: w.p99, rowCpuUs: w.cpuUs, qps: r.rps, queryP99: r.p99, queryCpuUs: r.cpuUs };
    };
    return {
      svc: side(svc, '/api/v1/data/bench/transactions', svcBodies, '/api/v1/data/bench/query', svcIds, (id) => JSON.stringify({ sql: SQL, params: [id] })),
      baseline: side(base, '/insert', baseBodies, '/query', baseIds, (id) => JSON.stringify({ params: [id] })),
      close: async () => {
        await svc.stop();
        await base.stop();
      },
    };
  },
  targets: [
    { metric: 'rowsPerSec', label: 'rows written', unit: 'rows/s', of: 'ratio', op: '>=', value: 0.6 },
    { metric: 'qps', label: 'point queries', unit: 'req/s', of: 'ratio', op: '>=', value: 0.6 },
    { metric: 'rows', label: 'rows written in a round', unit: 'rows' },
    { metric: 'batchP99', label: 'p99 per batch of 500', unit: 'ms' },
    { metric: 'queryP99', label: 'p99 per query', unit: 'ms' },
    { metric: 'rowCpuUs', label: 'CPU per row written (daemon)', unit: 'µs' },
    { metric: 'queryCpuUs', label: 'CPU per query (daemon)', unit: 'µs' },
  ],
};
