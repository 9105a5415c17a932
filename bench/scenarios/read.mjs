// GET /api/v1/tasks/{id} over 1,000 ids of a 10,000-task project, 32 connections, vs the plain
// node:http + better-sqlite3 server doing the same lookup, key check and envelope.
const TASKS = 10_000;

export default {
  name: 'read',
  order: 10,
  title: 'GET /api/v1/tasks/{id}, 32 connections',
  setup: (h) =>
    h.taskServerPair(TASKS, ({ key, ids }) => ({
      paths: ids.filter((_, i) => i % 10 === 0).map((id) => `/api/v1/tasks/${id}`),
      headers: { authorization: `Bearer ${key}` },
      connections: 32,
      seconds: 3,
    })),
  targets: [
    { metric: 'rps', label: 'throughput', unit: 'req/s', of: 'ratio', op: '>=', value: 0.75 },
    { metric: 'p99', label: 'p99', unit: 'ms', of: 'ratio', op: '<=', value: 2 },
    { metric: 'cpuUs', label: 'server CPU per request', unit: 'µs' },
    { metric: 'rss', label: 'RSS under load', unit: 'MiB' },
  ],
};
