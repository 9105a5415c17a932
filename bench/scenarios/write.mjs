// POST /api/v1/tasks (the task and its task:created event in one transaction), 32 connections,
// vs the plain server inserting the row and an event row in one transaction.
export default {
  name: 'write',
  order: 20,
  title: 'POST /api/v1/tasks, 32 connections',
  async setup(h) {
    const { root } = await h.seededProject(1_000);
    const copy = h.copyStateDb(root);
    const svc = await h.startSvc(root);
    const base = await h.startBaseline('tasks-server.mjs', { db: copy, key: svc.key });
    const bodies = Array.from({ length: 64 }, (_, i) => JSON.stringify({ title: `bench task ${i}`, description: 'written by the bench', labels: ['bench'] }));
    const headers = { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' };
    const run = (server) => h.loadServer(server, { method: 'POST', path: '/api/v1/tasks', bodies, headers, connections: 32, seconds: 3 });
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
    { metric: 'rps', label: 'throughput', unit: 'req/s', of: 'ratio', op: '>=', value: 0.6 },
    { metric: 'p99', label: 'p99', unit: 'ms' },
    { metric: 'cpuUs', label: 'server CPU per request', unit: 'µs' },
  ],
};
