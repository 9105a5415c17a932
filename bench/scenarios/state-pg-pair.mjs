// Issue 21 item 6: two `svc serve` processes on one PostgreSQL state, acting as one service, against
// one of them alone. The same reads and writes as state-pg.mjs; in the "ours" column the load is
// split across both daemons (two load processes of half the connections each, at once), in the
// "baseline" column daemon A alone takes all of it. Same database, same daemons, so the ratio is
// what the second daemon adds. On two cores, with PostgreSQL and the load on the same cores, it is
// a smoke figure: the second daemon can only take CPU from the others.
import { CONNECTIONS, metrics, readLoad, seededStateDb, startStatePostgres, TASKS, writeLoad } from '../lib/state-pg.mjs';

/** Both daemons under load at once; CPU per request summed over both. */
async function pair(h, a, b, ids) {
  const half = CONNECTIONS / 2;
  const both = async (loadOf) => {
    const [ra, rb] = await Promise.all([h.loadServer(a, loadOf(a.key, half)), h.loadServer(b, loadOf(b.key, half))]);
    const requests = ra.requests + rb.requests;
    // loadServer divides by at least one request; undo that to sum the two daemons' CPU.
    const cpu = (r) => r.cpuUs * Math.max(1, r.requests);
    // The slower daemon's p99 (a client of the service sees both); none when nothing was answered.
    const p99s = [ra, rb].filter((r) => r.requests > 0).map((r) => r.p99);
    return {
      rps: ra.rps + rb.rps,
      p99: p99s.length ? Math.max(...p99s) : NaN,
      cpuUs: (cpu(ra) + cpu(rb)) / Math.max(1, requests),
      errors: ra.errors + rb.errors,
      non2xx: ra.non2xx + rb.non2xx,
    };
  };
  return metrics(await both((key, n) => readLoad(key, ids, n)), await both((key, n) => writeLoad(key, n)));
}

export default {
  name: 'state-pg-pair',
  order: 74,
  title: `two daemons on one PostgreSQL state vs one (smoke figure on 2 cores): reads then writes, ${CONNECTIONS} connections split across both`,
  async setup(h) {
    const pgs = await startStatePostgres(h);
    const { url, ids } = await seededStateDb(h, pgs, 'svc_state', TASKS);
    const env = pgs.env(url);
    const a = await h.startSvc(h.makeProject(), { env });
    const b = await h.startSvc(h.makeProject(), { env });
    return {
      svc: () => pair(h, a, b, ids),
      baseline: async () => {
        const r = await h.loadServer(a, readLoad(a.key, ids));
        const w = await h.loadServer(a, writeLoad(a.key));
        return metrics(r, w);
      },
      close: async () => {
        await a.stop();
        await b.stop();
      },
    };
  },
  targets: [
    { metric: 'readRps', label: 'read throughput (pair / one)', unit: 'req/s', of: 'ratio', op: '>=', value: 1.6 },
    { metric: 'writeRps', label: 'write throughput (pair / one)', unit: 'req/s', of: 'ratio', op: '>=', value: 1.6 },
    { metric: 'readP99', label: 'read p99', unit: 'ms', of: 'ratio', op: '<=', value: 1 },
    { metric: 'writeP99', label: 'write p99', unit: 'ms', of: 'ratio', op: '<=', value: 1 },
    { metric: 'readCpuUs', label: 'daemon CPU per read', unit: 'µs' },
    { metric: 'writeCpuUs', label: 'daemon CPU per write', unit: 'µs' },
    { metric: 'errors', label: 'errors and non-2xx answers', unit: '', op: '==', value: 0 },
  ],
};
