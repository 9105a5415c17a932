// Issue 12 item 10: 100,000 rows through POST /api/v1/data/{db}/transactions in batches of 500
// (one insert operation each, 4 connections), vs plain better-sqlite3 behind plain node:http
// inserting the same rows in the same batches, one transaction per batch, answering the rows.
import { join } from 'node:path';
import { createDatabase, loadTree, row, TABLE } from '../lib/data.mjs';

const ROWS = 100_000;
const BATCH = 500;

export default {
  name: 'data-batch',
  order: 70,
  title: `${ROWS.toLocaleString('en-US')} rows through /transactions in batches of ${BATCH}, 4 connections`,
  async setup(h) {
    const root = h.makeProject();
    const svc = await h.startSvc(root);
    await createDatabase(svc, 'bench');
    const base = await h.startBaseline('data-server.mjs', { db: join(root, 'baseline.sqlite'), key: svc.key, table: TABLE });
    // Two distinct bodies: the load generator takes them on its command line, which has a size limit.
    const batch = (b) => Array.from({ length: BATCH }, (_, j) => row(b * BATCH + j));
    const svcBodies = Array.from({ length: 2 }, (_, b) => JSON.stringify({ operations: [{ op: 'insert', table: 'items', rows: batch(b) }] }));
    const baseBodies = Array.from({ length: 2 }, (_, b) => JSON.stringify({ rows: batch(b) }));
    const headers = { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' };
    const run = async (server, path, bodies) => {
      const r = await loadTree(h, server, { method: 'POST', path, bodies, headers, connections: 4, amount: ROWS / BATCH }, BATCH);
      return { ...r, rowsPerSec: r.rps * BATCH };
    };
    return {
      svc: () => run(svc, '/api/v1/data/bench/transactions', svcBodies),
      baseline: () => run(base, '/insert', baseBodies),
      close: async () => {
        await svc.stop();
        await base.stop();
      },
    };
  },
  targets: [
    { metric: 'rowsPerSec', label: 'rows written', unit: 'rows/s', of: 'ratio', op: '>=', value: 0.5 },
    { metric: 'p99', label: 'p99 per batch', unit: 'ms' },
    { metric: 'cpuUs', label: 'CPU per row (daemon + workers)', unit: 'µs' },
  ],
};
