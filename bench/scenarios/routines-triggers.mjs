// Issue 34: 1,000 event triggers (task:created, each with a filter on the title that this load
// never matches) evaluated for every task written: POST /api/v1/tasks at 32 connections against
// the same daemon with no routines. Then how long a matching trigger waits after the load (the
// matching's backlog: it runs when the event loop is free, never inside a write).
const TRIGGERS = 1_000;
const TASKS = 1_000;

async function daemon(h, triggers) {
  const { root } = await h.seededProject(TASKS);
  const svc = await h.startSvc(root);
  const headers = { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' };
  const post = async (path, body) => {
    const res = await fetch(`${svc.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()).data;
  };
  for (let i = 0; i < triggers; i++) {
    await post('/api/v1/routines', {
      name: `on-created-${i}`,
      trigger: { event: 'task:created', filter: { title: `never ${i}` } },
      concurrency: 'allow',
      action: { task: { title: 'matched {{event.data.title}}' } },
    });
  }
  if (triggers)
    await post('/api/v1/routines', { name: 'sentinel', trigger: { event: 'task:created', filter: { title: { prefix: 'sentinel ' } } }, concurrency: 'allow', action: { task: { title: 'seen' } } });
  return { svc, headers, post };
}

export default {
  name: 'routines-triggers',
  order: 91,
  title: `POST /api/v1/tasks, 32 connections, ${TRIGGERS.toLocaleString('en')} triggers matched per event vs none`,
  async setup(h) {
    const on = await daemon(h, TRIGGERS);
    const off = await daemon(h, 0);
    const writes = (key) => ({
      method: 'POST',
      path: '/api/v1/tasks',
      bodies: Array.from({ length: 64 }, (_, i) => JSON.stringify({ title: `bench task ${i}`, labels: ['bench'] })),
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      connections: 32,
      seconds: 3,
    });
    let n = 0;
    return {
      async svc() {
        const r = await h.loadServer(on.svc, writes(on.svc.key));
        // Right after the load: a task the sentinel matches, and how long until its firing is recorded.
        const t0 = performance.now();
        await on.post('/api/v1/tasks', { title: `sentinel ${++n}` });
        for (;;) {
          const fs = await (await fetch(`${on.svc.url}/api/v1/routines/sentinel/firings?limit=200`, { headers: on.headers })).json();
          if (fs.data.length >= n) break;
          await h.sleep(5);
        }
        return { ...r, matchedAfterMs: performance.now() - t0 };
      },
      baseline: () => h.loadServer(off.svc, writes(off.svc.key)),
      close: async () => {
        await on.svc.stop();
        await off.svc.stop();
      },
    };
  },
  targets: [
    { metric: 'rps', label: 'task writes, with triggers / without', unit: 'req/s', of: 'ratio', op: '>=', value: 0.9 },
    { metric: 'p99', label: 'write p99', unit: 'ms', of: 'ratio' },
    { metric: 'cpuUs', label: 'server CPU per write', unit: 'µs', of: 'ratio' },
    { metric: 'matchedAfterMs', label: 'a matching trigger fires, after the load', unit: 'ms' },
  ],
};
