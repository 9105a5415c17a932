// Memory of svc's process tree when many application databases are used in turn (issue 18 item 3):
// `node bench/worker-memory.mjs [--databases 40] [--rounds 2] [--config '{"data":{"maxWorkers":256}}']`
// (after `npm run build`). Creates the databases, then queries each in turn, round after round,
// and samples the daemon's and its workers' RSS after every query; the last line sums it up (the
// most workers and the most memory seen, memory at rest, and the time a query took). With no cap
// every database touched kept its ~60 MB worker for a minute. Not part of `npm run bench`: it
// measures memory, not speed against a baseline.
import { readdirSync, readFileSync } from 'node:fs';
import * as h from './lib/harness.mjs';

const arg = h.arg;
const DATABASES = Number(arg('databases', 40));
const ROUNDS = Number(arg('rounds', 2));
const CONFIG = JSON.parse(arg('config', '{}'));

/** The daemon and its children: how many children, and the RSS of all, in MB. */
function tree(pid) {
  let rss = h.rssMiB(pid);
  let workers = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== pid) continue;
      // A worker that has just exited (a zombie) has no resident set left.
      const r = h.rssMiB(Number(d));
      if (!Number.isFinite(r)) continue;
      rss += r;
      workers++;
    } catch {
      // gone meanwhile
    }
  }
  return { rssMB: Math.round(rss * 1.048576), workers };
}

try {
  const root = h.makeProject(CONFIG);
  const svc = await h.startSvc(root);
  const headers = { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' };
  const post = async (path, body) => {
    const res = await fetch(`${svc.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
    return res.json();
  };
  for (let i = 0; i < DATABASES; i++) await post('/api/v1/data', { name: `d${i}`, schema: { tables: { t: { columns: { a: { type: 'integer' } } } } } });
  let most = { rssMB: 0, workers: 0 };
  const t0 = performance.now();
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < DATABASES; i++) {
      await post(`/api/v1/data/d${i}/query`, { sql: 'SELECT count(*) AS n FROM t' });
      const t = tree(svc.pid);
      most = { rssMB: Math.max(most.rssMB, t.rssMB), workers: Math.max(most.workers, t.workers) };
    }
    process.stdout.write(JSON.stringify({ round: round + 1, ...tree(svc.pid) }) + '\n');
  }
  const msPerQuery = Math.round((performance.now() - t0) / (DATABASES * ROUNDS));
  await h.sleep(2000);
  process.stdout.write(JSON.stringify({ summary: true, databases: DATABASES, rounds: ROUNDS, mostWorkers: most.workers, mostMB: most.rssMB, atRest: tree(svc.pid), msPerQuery }) + '\n');
  await svc.stop();
} finally {
  await h.cleanupAll();
}
