// POST /api/v1/tasks (the task and its task:created event in one transaction), 32 connections,
// vs the plain server inserting the row and an event row in one transaction.
export default {
  name: 'write',
  order: 20,
  title: 'POST /api/v1/tasks, 32 connections',
  setup: (h) =>
    h.taskServerPair(1_000, ({ key }) => ({
      method: 'POST',
      path: '/api/v1/tasks',
      bodies: Array.from({ length: 64 }, (_, i) => JSON.stringify({ title: `bench task ${i}`, description: 'written by the bench', labels: ['bench'] })),
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      connections: 32,
      seconds: 3,
    })),
  targets: [
    { metric: 'rps', label: 'throughput', unit: 'req/s', of: 'ratio', op: '>=', value: 0.6 },
    { metric: 'p99', label: 'p99', unit: 'ms' },
    { metric: 'cpuUs', label: 'server CPU per request', unit: 'µs' },
  ],
};
