// Issue 34: 1,000 routines on a minute schedule (`* * * * *`, each creating a task). Each round
// waits for a minute boundary: how late the 1,000 firings are (firedAt - scheduledAt, from their
// records), and the task GET p99 at a steady 300 req/s across the boundary beside the same load in
// the quiet seconds before it. Rounds last a minute each: the scenario takes about four.
const ROUTINES = 1_000;
const TASKS = 1_000;

export default {
  name: 'routines',
  order: 90,
  title: `${ROUTINES.toLocaleString('en')} minutely routines: firing lateness, and task GETs beside the burst`,
  warmup: false,
  rounds: 3,
  async setup(h) {
    const { root, ids } = await h.seededProject(TASKS);
    const svc = await h.startSvc(root);
    const headers = { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' };
    for (let i = 0; i < ROUTINES; i++) {
      const body = { name: `minutely-${i}`, schedule: { cron: '* * * * *' }, concurrency: 'allow', action: { task: { title: 'routine {{routine.name}} at {{firing.time}}' } } };
      const res = await fetch(`${svc.url}/api/v1/routines`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (res.status !== 201) throw new Error(`creating routine ${i}: ${res.status} ${await res.text()}`);
    }
    const gets = { paths: ids.filter((_, i) => i % 10 === 0).map((id) => `/api/v1/tasks/${id}`), headers: { authorization: `Bearer ${svc.key}` }, connections: 8, overallRate: 300 };
    return {
      async svc() {
        let boundary = Math.ceil(Date.now() / 60_000) * 60_000;
        if (boundary - Date.now() < 6_000) boundary += 60_000;
        await h.sleep(boundary - 5_500 - Date.now());
        const quiet = await h.loadServer(svc, { ...gets, seconds: 3 });
        await h.sleep(Math.max(0, boundary - 1_000 - Date.now()));
        const burst = await h.loadServer(svc, { ...gets, seconds: 5 });
        const list = await (await fetch(`${svc.url}/api/v1/routines`, { headers })).json();
        const at = new Date(boundary).toISOString();
        const late = list.data
          .flatMap((r) => r.lastFirings.filter((f) => f.scheduledAt === at && f.status === 'fired'))
          .map((f) => Date.parse(f.firedAt) - boundary)
          .sort((a, b) => a - b);
        return {
          fired: late.length,
          latenessP50: h.percentile(late, 0.5),
          latenessP99: h.percentile(late, 0.99),
          latenessMax: late.at(-1),
          getP99Quiet: quiet.p99,
          getP99Burst: burst.p99,
          getP99Ratio: burst.p99 / quiet.p99,
          rss: svc.rss(),
        };
      },
      close: () => svc.stop(),
    };
  },
  targets: [
    { metric: 'fired', label: 'firings at the boundary', unit: '', op: '>=', value: ROUTINES },
    { metric: 'latenessP50', label: 'firing lateness p50', unit: 'ms' },
    { metric: 'latenessP99', label: 'firing lateness p99', unit: 'ms', op: '<', value: 1_000 },
    { metric: 'latenessMax', label: 'firing lateness max', unit: 'ms' },
    { metric: 'getP99Quiet', label: 'task GET p99, quiet seconds', unit: 'ms' },
    { metric: 'getP99Burst', label: 'task GET p99 across the boundary', unit: 'ms', op: '<', value: 20 },
    { metric: 'getP99Ratio', label: 'task GET p99, boundary / quiet', unit: '×' },
    { metric: 'rss', label: 'RSS', unit: 'MiB' },
  ],
};
