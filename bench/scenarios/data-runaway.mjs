// Issue 12 item 4: GET /api/v1/tasks/{id} (16 connections) while a runaway statement (an endless
// recursive CTE) runs on an application database until data.statementTimeoutMs (5 s) stops it.
// No baseline: the target is absolute (p99 under 100 ms while it runs; the same load without a
// runaway is the 'calm' row for comparison).
import { createDatabase } from '../lib/data.mjs';

const RUNAWAY = 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r';

export default {
  name: 'data-runaway',
  order: 72,
  title: 'GET /api/v1/tasks/{id} while a runaway SQL statement runs (stopped at 5 s), 16 connections',
  warmup: false,
  async setup(h) {
    const { root, ids } = await h.seededProject(1_000);
    const svc = await h.startSvc(root);
    await createDatabase(svc, 'spin');
    const headers = { authorization: `Bearer ${svc.key}` };
    const paths = ids.slice(0, 100).map((id) => `/api/v1/tasks/${id}`);
    const probe = () => h.loadServer(svc, { paths, headers, connections: 16, seconds: 3 });
    return {
      svc: async () => {
        const calm = await probe();
        const runaway = fetch(`${svc.url}/api/v1/data/spin/query`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ sql: RUNAWAY }),
        });
        await h.sleep(200);
        const during = await probe();
        const res = await runaway;
        await res.arrayBuffer();
        if (res.status !== 503) throw new Error(`the runaway answered ${res.status}, not 503`);
        return { p99: during.p99, p50: during.p50, rps: during.rps, calmP99: calm.p99 };
      },
      close: () => svc.stop(),
    };
  },
  targets: [
    { metric: 'p99', label: 'p99 during the runaway', unit: 'ms', op: '<', value: 100 },
    { metric: 'calmP99', label: 'p99 without it', unit: 'ms' },
    { metric: 'rps', label: 'throughput during the runaway', unit: 'req/s' },
  ],
};
