// A filtered page of 50 from 100,000 tasks: GET /api/v1/tasks?status=…&limit=50, first pages and
// pages deep in the list (a cursor), 8 connections. Target: p99 < 10 ms. The baseline runs the
// same indexed query and envelope, for the ratio.
const TASKS = 100_000;
const STATES = ['pending', 'assigned', 'in_progress', 'done'];

export default {
  name: 'list',
  order: 30,
  title: `GET /api/v1/tasks?status=…&limit=50 with ${TASKS.toLocaleString('en-US')} tasks, 8 connections`,
  setup: (h) =>
    h.taskServerPair(TASKS, ({ key, ids }) => {
      const paths = [];
      for (const status of STATES) {
        paths.push(`/api/v1/tasks?status=${status}&limit=50`);
        for (let k = 1; k <= 4; k++) paths.push(`/api/v1/tasks?status=${status}&limit=50&cursor=${ids[Math.floor((TASKS * k) / 5)]}`);
      }
      return { paths, headers: { authorization: `Bearer ${key}` }, connections: 8, seconds: 3 };
    }),
  targets: [
    { metric: 'p99', label: 'p99', unit: 'ms', op: '<', value: 10 },
    { metric: 'rps', label: 'throughput', unit: 'req/s' },
    { metric: 'cpuUs', label: 'server CPU per request', unit: 'µs' },
  ],
};
