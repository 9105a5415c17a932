// Issue 12 item 10: rows through POST /api/v1/data/{db}/transactions in batches of 500 (one
// insert operation each, 4 connections), vs plain better-sqlite3 behind plain node:http inserting
// the same rows in the same batches, one transaction per batch, answering the rows. Each side runs
// for 4 s (100,000 rows or more at the rates seen): the load generator reports whole-second
// durations, which would make a fixed amount of 200 batches finish "in 2 s" on both sides.
import { join } from 'node:path';
import { createDatabase, loadTree, row, TABLE } from '../lib/data.mjs';

const BATCH = 500;

export default {
  name: 'data-batch',
  order: 70,
  title: `rows through /transactions in batches of ${BATCH}, 4 connections, 4 s a side`,
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
      const r = await loadTree(h, server, { method: 'POST', path, bodies, headers, connections: 4, seconds: 4 }, BATCH);
      return { ...r, rowsPerSec: r.rps * BATCH, rows: r.requests * BATCH };
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
    { metric: 'rows', label: 'rows written in a round', unit: 'rows' },
    { metric: 'cpuUs', label: 'CPU per row (daemon + workers)', unit: 'µs' },
  ],
};
