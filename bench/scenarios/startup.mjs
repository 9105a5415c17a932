// Start-up with 10,000 tasks: `svc serve` spawned → /healthz answering (port read from
// .svc/daemon.json, polled every 2 ms), then the RSS after 2 s idle. The baseline is the plain
// server opening a copy of the same database, for scale.
const TASKS = 10_000;

export default {
  name: 'startup',
  order: 60,
  title: `svc serve → healthz with ${TASKS.toLocaleString('en-US')} tasks; idle RSS`,
  async setup(h) {
    const { root } = await h.seededProject(TASKS);
    const copy = h.copyStateDb(root);
    const key = 'bench-baseline-key-0123456789';
    return {
      async svc() {
        const svc = await h.startSvc(root);
        await h.sleep(2_000);
        const idleRss = svc.rss();
        await svc.stop();
        return { readyMs: svc.readyMs, idleRss };
      },
      async baseline() {
        const t0 = performance.now();
        const base = await h.startBaseline('tasks-server.mjs', { db: copy, key });
        await (await fetch(`${base.url}/api/v1/tasks/none`, { headers: { authorization: `Bearer ${key}` } })).arrayBuffer();
        const readyMs = performance.now() - t0;
        await h.sleep(2_000);
        const idleRss = base.rss();
        await base.stop();
        return { readyMs, idleRss };
      },
    };
  },
  targets: [
    { metric: 'readyMs', label: 'ready (healthz)', unit: 'ms', op: '<', value: 500 },
    { metric: 'idleRss', label: 'idle RSS', unit: 'MiB', op: '<', value: 120 },
  ],
};
