// How big the state database grows under a steady write load with a `*` webhook (issue 18 item 7):
// `node bench/state-growth.mjs [--seconds 300] [--rate 1000] [--config '{"events":{"maxEvents":1000}}']`
// (after `npm run build`). Each request is a PATCH of one of 50 tasks (a task:updated event, one
// delivery to a local receiver answering 200, one attempt row), so nothing but events, deliveries
// and attempts grows. Every 10 s it prints the size of state.sqlite and its WAL, the rows kept and
// the free pages; the last line sums it up. Not part of `npm run bench`: a run lasts minutes.
import Database from '../dist/src/db/sqlite.js';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import * as h from './lib/harness.mjs';

const arg = h.arg;
const SECONDS = Number(arg('seconds', 300));
const RATE = Number(arg('rate', 1000));
const CONFIG = JSON.parse(arg('config', '{}'));
const STEP_S = 10;

const size = (f) => {
  try {
    return statSync(f).size;
  } catch {
    return 0;
  }
};
const mb = (n) => Math.round((n / 1e6) * 10) / 10;

try {
  const { root } = await h.seededProject(0, CONFIG);
  const svc = await h.startSvc(root);
  const rx = await h.startBaseline('../lib/webhook-receiver.mjs');
  const headers = { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' };
  const post = async (path, body) => (await (await fetch(`${svc.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })).json()).data;
  await post('/v1/webhooks', { url: `${rx.url}/all`, events: ['*'] });
  const tasks = [];
  for (let i = 0; i < 50; i++) tasks.push((await post('/api/v1/tasks', { title: `task ${i}` })).id);
  const file = join(root, '.svc', 'state.sqlite');
  const sample = (t, load) => {
    // A short-lived reader: a connection held open would keep checkpoints from finishing.
    const db = new Database(file, { readonly: true });
    const n = (sql) => db.prepare(sql).get().n;
    const row = {
      t,
      dbMB: mb(size(file)),
      walMB: mb(size(`${file}-wal`)),
      events: n('SELECT COUNT(*) AS n FROM events'),
      deliveries: n('SELECT COUNT(*) AS n FROM webhook_deliveries'),
      pending: n("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending'"),
      attempts: n('SELECT COUNT(*) AS n FROM webhook_attempts'),
      freePages: n('SELECT freelist_count AS n FROM pragma_freelist_count'),
      pages: n('SELECT page_count AS n FROM pragma_page_count'),
      ...(load ? { rps: Math.round(load.rps), p99: Math.round(load.p99 * 10) / 10, non2xx: load.non2xx } : {}),
    };
    db.close();
    process.stdout.write(JSON.stringify(row) + '\n');
    return row;
  };
  const first = sample(0);
  let last = first;
  let maxDb = 0;
  let maxWal = 0;
  let requests = 0;
  for (let t = STEP_S; t <= SECONDS; t += STEP_S) {
    const load = await h.load({
      url: svc.url,
      method: 'PATCH',
      paths: tasks.map((id) => `/api/v1/tasks/${id}`),
      bodies: [JSON.stringify({ title: 'ping' }), JSON.stringify({ title: 'pong' })],
      headers,
      connections: 8,
      overallRate: RATE,
      seconds: STEP_S,
    });
    requests += load.requests;
    last = sample(t, load);
    maxDb = Math.max(maxDb, last.dbMB);
    maxWal = Math.max(maxWal, last.walMB);
  }
  process.stdout.write(
    JSON.stringify({ summary: true, seconds: SECONDS, requests, startMB: first.dbMB, endMB: last.dbMB, maxDbMB: maxDb, maxWalMB: maxWal, events: last.events, deliveries: last.deliveries }) + '\n',
  );
  await svc.stop();
  await rx.stop();
} finally {
  await h.cleanupAll();
}
