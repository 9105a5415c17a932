// A filtered page of 50 from 100,000 tasks: GET /api/v1/tasks?status=…&limit=50, first pages and
// pages deep in the list (a cursor), 8 connections. Target: p99 < 10 ms. The baseline runs the
// same indexed query and envelope, for the ratio.
const TASKS = 100_000;
const STATES = ['pending', 'assigned', 'in_progress', 'done'];

export default {
  name: 'list',
  order: 30,
  title: `GET /api/v1/tasks?status=…&limit=50 with ${TASKS.toLocaleString('en-US')} tasks, 8 connections`,
  async setup(h) {
    const { root, ids } = await h.seededProject(TASKS);
    const copy = h.copyStateDb(root);
    const svc = await h.startSvc(root);
    const base = await h.startBaseline('tasks-server.mjs', { db: copy, key: svc.key });
    const paths = [];
    for (const status of STATES) {
      paths.push(`/api/v1/tasks?status=${status}&limit=50`);
      for (let k = 1; k <= 4; k++) paths.push(`/api/v1/tasks?status=${status}&limit=50&cursor=${ids[Math.floor((TASKS * k) / 5)]}`);
    }
    const headers = { authorization: `Bearer ${svc.key}` };
    const run = (server) => h.loadServer(server, { paths, headers, connections: 8, seconds: 3 });
    return {
      svc: () => run(svc),
      baseline: () => run(base),
      close: async () => {
        await svc.stop();
        await base.stop();
      },
    };
  },
  targets: [
    { metric: 'p99', label: 'p99', unit: 'ms', op: '<', value: 10 },
    { metric: 'rps', label: 'throughput', unit: 'req/s' },
    { metric: 'cpuUs', label: 'server CPU per request', unit: 'µs' },
  ],
};
