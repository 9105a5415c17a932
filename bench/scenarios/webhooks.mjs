// Webhook delivery (issue 11 item 8): 5,000 deliveries to a local receiver that answers 200 at
// once (its own process), by svc's delivery worker vs a plain undici loop posting the same signed
// bodies at the same concurrency (bench/baselines/webhook-sender.mjs). Deliveries are written into
// the running daemon's state database as the event sink writes them (pending rows, through a
// second connection) and the worker is woken with POST /test, so the rate (receiver's first to last
// delivery) measures delivery alone. While the worker runs, a light steady API load (200 req/s of
// GET /api/v1/tasks?limit=50, its own process) measures request latency; the same load with the
// worker idle gives the reference p99. The probe starts 300 ms before the deliveries and lasts
// 1.5 s, so it overlaps most of the delivery run.
//
// One slow endpoint (issue 18 item 5), in a second daemon with the default limits: a receiver that
// hangs 15 s gets 40 deliveries each round (team:created), then a healthy receiver gets 200
// (task:created, one POST /api/v1/tasks every 10 ms); its p50 and p99 are the time from each
// event to its arrival (the envelope's timestamp against the receiver's clock, same machine).
import Database from '../../dist/src/db/sqlite.js';
import { join } from 'node:path';
import { uuidv7 } from '../../dist/src/lib/ids.js';

const N = 5000;
const CONCURRENCY = 16;
const PROBE = { path: '/api/v1/tasks?limit=50', connections: 2, overallRate: 200, seconds: 1.5 };
const STUCK = 40;
const HEALTHY = 200;
const HEALTHY_EVERY_MS = 10;

export default {
  name: 'webhooks',
  order: 70,
  title: `webhook delivery: ${N.toLocaleString('en-US')} deliveries to a local receiver answering 200, concurrency ${CONCURRENCY}`,
  async setup(h) {
    const { root } = await h.seededProject(1000, { webhooks: { concurrency: CONCURRENCY } });
    const svc = await h.startSvc(root);
    const rx = await h.startBaseline('../lib/webhook-receiver.mjs');
    const auth = { authorization: `Bearer ${svc.key}` };
    const created = await (
      await fetch(`${svc.url}/v1/webhooks`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ url: `${rx.url}/hook`, events: ['team:created'] }) })
    ).json();
    const webhook = created.data;
    const stats = async () => (await fetch(`${rx.url}/stats`)).json();
    const reset = async () => void (await fetch(`${rx.url}/reset`, { method: 'POST' })).arrayBuffer();
    const fair = await slowEndpoint(h);
    const db = new Database(join(root, '.svc', 'state.sqlite'));
    db.pragma('busy_timeout = 5000');
    const insert = db.prepare(
      "INSERT INTO webhook_deliveries (id, webhook_id, event_id, event, body, status, attempts, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, 'team:created', ?, 'pending', 0, ?, ?, ?)",
    );
    h.onCleanup(() => db.close());
    const timestamp = new Date().toISOString();
    const seed = (n) =>
      db.transaction(() => {
        for (let i = 0; i < n; i++) insert.run(uuidv7(), webhook.id, i + 1, JSON.stringify({ event: 'team:created', data: { name: `team-${i}` }, timestamp }), Date.now(), timestamp, timestamp);
      })();
    const waitFor = async (n) => {
      for (;;) {
        const s = await stats();
        if (s.count >= n) return s;
        await h.sleep(20);
      }
    };
    const deliver = async (n, probe) => {
      await reset();
      seed(n);
      const cpu0 = h.cpuMs(svc.pid);
      const probing = probe ? h.load({ url: svc.url, headers: auth, ...PROBE }) : null;
      if (probe) await h.sleep(300);
      const res = await fetch(`${svc.url}/v1/webhooks/${webhook.id}/test`, { method: 'POST', headers: auth });
      if (res.status !== 202) throw new Error(`POST /test answered ${res.status}`);
      const s = await waitFor(n + 1);
      const cpu = h.cpuMs(svc.pid) - cpu0;
      return { rate: ((s.count - 1) / (s.lastMs - s.firstMs)) * 1000, cpuUs: (cpu * 1000) / (n + 1), probe: await probing };
    };
    return {
      warmup: async () => {
        await deliver(500, false);
        await h.load({ url: svc.url, headers: auth, ...PROBE });
        await fair.round(20);
      },
      svc: async () => {
        const idle = await h.load({ url: svc.url, headers: auth, ...PROBE });
        const d = await deliver(N, true);
        const f = await fair.round(HEALTHY);
        return { rate: d.rate, apiP99Delta: d.probe.p99 - idle.p99, apiP99: d.probe.p99, apiP99Idle: idle.p99, cpuUs: d.cpuUs, healthyP50: f.p50, healthyP99: f.p99, healthyMax: f.max };
      },
      baseline: async () => {
        await reset();
        const r = await h.runJsonChild(new URL('../baselines/webhook-sender.mjs', import.meta.url).pathname, {
          url: `${rx.url}/hook`,
          n: N,
          concurrency: CONCURRENCY,
          secret: 'whsec_' + Buffer.alloc(32, 7).toString('base64'),
        });
        if (r.sent !== N) throw new Error(`baseline sent ${r.sent} of ${N}`);
        const s = await stats();
        return { rate: ((s.count - 1) / (s.lastMs - s.firstMs)) * 1000 };
      },
      close: async () => {
        await svc.stop();
        await rx.stop();
        await fair.close();
      },
    };
  },
  targets: [
    { metric: 'rate', label: 'deliveries per second', unit: '/s', of: 'ratio', op: '>=', value: 0.5 },
    { metric: 'apiP99Delta', label: 'API p99 added while delivering', unit: 'ms', op: '<=', value: 5 },
    { metric: 'apiP99', label: 'API p99 while delivering', unit: 'ms' },
    { metric: 'apiP99Idle', label: 'API p99, worker idle', unit: 'ms' },
    { metric: 'cpuUs', label: 'daemon CPU per delivery', unit: 'µs' },
    { metric: 'healthyP99', label: `healthy receiver p99, ${STUCK} deliveries stuck on one hanging 15 s`, unit: 'ms', op: '<', value: 100 },
    { metric: 'healthyP50', label: 'healthy receiver p50, same', unit: 'ms' },
    { metric: 'healthyMax', label: 'healthy receiver max, same', unit: 'ms' },
  ],
};

/** The slow-endpoint measure's daemon and receivers; round(n) returns the healthy receiver's latencies. */
async function slowEndpoint(h) {
  const { root } = await h.seededProject(0);
  const svc = await h.startSvc(root);
  const hanging = await h.startBaseline('../lib/webhook-receiver.mjs', { hangMs: 15_000 });
  const healthy = await h.startBaseline('../lib/webhook-receiver.mjs', { latency: true });
  const headers = { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' };
  const post = async (path, body) => {
    const res = await fetch(`${svc.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`POST ${path} answered ${res.status}: ${await res.text()}`);
    return (await res.json()).data;
  };
  await post('/v1/webhooks', { url: `${hanging.url}/hang`, events: ['team:created'] });
  await post('/v1/webhooks', { url: `${healthy.url}/ok`, events: ['task:created'] });
  const count = async (rx) => (await (await fetch(`${rx.url}/stats`)).json()).count;
  let teams = 0;
  return {
    async round(n) {
      await fetch(`${healthy.url}/reset`, { method: 'POST' });
      const held = await count(hanging);
      for (let i = 0; i < STUCK; i++) await post('/api/v1/agents/teams', { name: `stuck-${teams++}` });
      // The hanging receiver has its first ones: from now on they hold their slots for 10 s each.
      while ((await count(hanging)) === held) await h.sleep(10);
      const started = performance.now();
      for (let i = 0; i < n; i++) {
        await post('/api/v1/tasks', { title: `healthy ${i}` });
        const wait = started + (i + 1) * HEALTHY_EVERY_MS - performance.now();
        if (wait > 0) await h.sleep(wait);
      }
      for (;;) {
        if ((await count(healthy)) >= n) break;
        await h.sleep(20);
      }
      const lat = (await (await fetch(`${healthy.url}/latencies`)).json()).sort((a, b) => a - b);
      return { p50: h.percentile(lat, 0.5), p99: h.percentile(lat, 0.99), max: lat[lat.length - 1] };
    },
    async close() {
      await svc.stop();
      await hanging.stop();
      await healthy.stop();
    },
  };
}
