// Issue 12 item 10: a point query (SELECT * FROM items WHERE _id = ?) through POST
// /api/v1/data/{db}/query, 32 connections, over 10,000 rows, vs the same statement behind plain
// node:http. svc's side includes the hop to the database's worker process and back.
import { join } from 'node:path';
import { createDatabase, loadTree, row, TABLE } from '../lib/data.mjs';

const ROWS = 10_000;
const SQL = 'SELECT * FROM items WHERE _id = ?';

async function seed(url, path, headers, wrap) {
  const ids = [];
  for (let b = 0; b < ROWS / 500; b++) {
    const rows = Array.from({ length: 500 }, (_, j) => row(b * 500 + j));
    const res = await fetch(url + path, { method: 'POST', headers, body: JSON.stringify(wrap(rows)) });
    if (res.status !== 200) throw new Error(`seeding answered ${res.status}`);
    for (const r of (await res.json()).data[0].rows) ids.push(r._id);
  }
  return ids;
}

export default {
  name: 'data-query',
  order: 71,
  title: `point query through /api/v1/data/{db}/query over ${ROWS.toLocaleString('en-US')} rows, 32 connections`,
  async setup(h) {
    const root = h.makeProject();
    const svc = await h.startSvc(root);
    await createDatabase(svc, 'bench');
    const base = await h.startBaseline('data-server.mjs', { db: join(root, 'baseline.sqlite'), key: svc.key, table: TABLE });
    const headers = { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' };
    const svcIds = await seed(svc.url, '/api/v1/data/bench/transactions', headers, (rows) => ({ operations: [{ op: 'insert', table: 'items', rows }] }));
    const baseIds = await seed(base.url, '/insert', headers, (rows) => ({ rows }));
    const bodies = (ids) => ids.filter((_, i) => i % 10 === 0).map((id) => JSON.stringify({ sql: SQL, params: [id] }));
    const run = (server, path, ids) => loadTree(h, server, { method: 'POST', path, bodies: bodies(ids), headers, connections: 32, seconds: 3 });
    return {
      svc: () => run(svc, '/api/v1/data/bench/query', svcIds),
      baseline: () => run(base, '/query', baseIds),
      close: async () => {
        await svc.stop();
        await base.stop();
      },
    };
  },
  targets: [
    { metric: 'rps', label: 'throughput', unit: 'req/s', of: 'ratio', op: '>=', value: 0.5 },
    { metric: 'p99', label: 'p99', unit: 'ms' },
    { metric: 'cpuUs', label: 'CPU per request (daemon + worker)', unit: 'µs' },
  ],
};
