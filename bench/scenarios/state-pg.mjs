// Issue 21 item 6: the daemon's own state on PostgreSQL. read.mjs's GET /api/v1/tasks/{id} and
// write.mjs's POST /api/v1/tasks against svc whose state (tasks, events...) lives on a throwaway
// PostgreSQL, beside plain `pg` + node:http sending the same statements (baselines/state-pg-server.mjs).
// Each side has a database of its own on the one server, seeded alike.
import { CONNECTIONS, readThenWrite, seededStateDb, startStatePostgres, TASKS } from '../lib/state-pg.mjs';

export default {
  name: 'state-pg',
  order: 73,
  title: `state on PostgreSQL: GET /api/v1/tasks/{id} over ${TASKS.toLocaleString('en-US')} tasks, then POST /api/v1/tasks, ${CONNECTIONS} connections`,
  async setup(h) {
    const pgs = await startStatePostgres(h);
    const ours = await seededStateDb(h, pgs, 'svc_state', TASKS);
    const theirs = await seededStateDb(h, pgs, 'base_state', TASKS);
    const svc = await h.startSvc(h.makeProject(), { env: pgs.env(ours.url) });
    const base = await h.startBaseline('state-pg-server.mjs', { url: theirs.url, key: svc.key });
    return {
      svc: () => readThenWrite(h, svc, svc.key, ours.ids),
      baseline: () => readThenWrite(h, base, svc.key, theirs.ids),
      close: async () => {
        await svc.stop();
        await base.stop();
      },
    };
  },
  targets: [
    { metric: 'readRps', label: 'read throughput', unit: 'req/s', of: 'ratio', op: '>=', value: 0.8 },
    { metric: 'writeRps', label: 'write throughput', unit: 'req/s', of: 'ratio', op: '>=', value: 0.8 },
    { metric: 'readP99', label: 'read p99', unit: 'ms' },
    { metric: 'writeP99', label: 'write p99', unit: 'ms' },
    { metric: 'readCpuUs', label: 'server CPU per read', unit: 'µs' },
    { metric: 'writeCpuUs', label: 'server CPU per write', unit: 'µs' },
    { metric: 'errors', label: 'errors and non-2xx answers', unit: '', op: '==', value: 0 },
  ],
};
