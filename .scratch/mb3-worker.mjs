import { workerData } from 'node:worker_threads';
import { serialize, deserialize } from 'node:v8';
import pg from '/work/main/node_modules/pg/lib/index.js';
const { sab, url } = workerData;
const ctl = new Int32Array(sab, 0, 4);
const data = new Uint8Array(sab, 16);
const types = { getTypeParser: (oid, f) => (oid === 20 ? Number : pg.types.getTypeParser(oid, f)) };
const c = new pg.Client({ connectionString: url, types }); await c.connect();
const names = new Map();
let seen = 0;
for (;;) {
  const w = Atomics.waitAsync(ctl, 0, seen);
  if (w.async) await w.value;
  seen = Atomics.load(ctl, 0);
  const req = deserialize(data.subarray(0, Atomics.load(ctl, 2)));
  let name = names.get(req.sql); if (!name) names.set(req.sql, (name = 's' + (names.size + 1)));
  const r = await c.query({ name, text: req.sql, values: req.params });
  const b = serialize({ rows: r.rows, rowCount: r.rowCount }); data.set(b); Atomics.store(ctl, 2, b.length);
  Atomics.store(ctl, 1, seen); Atomics.notify(ctl, 1);
}
