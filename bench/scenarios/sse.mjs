// SSE fan-out: 200 subscribers (their own process) on task:created, 20,000 tasks created by a load
// process at a steady 2,000 a second; every event must reach every subscriber, in order. Emit →
// receive is measured from the event's created_at (written in its transaction) to the moment the
// subscriber reads it. The daemon's peak RSS is sampled every 50 ms from /proc. No baseline: the
// target is absolute.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SUBSCRIBERS = 200;
const EVENTS = 20_000;
const RATE = 2_000;
// Several keys, as several agents would hold: per-key stream caps must not be what is measured.
const KEYS = Array.from({ length: 10 }, (_, i) => `bench-sse-key-${i}-${'x'.repeat(24)}`);
const SUBSCRIBER = fileURLToPath(new URL('../lib/sse-subscribers.mjs', import.meta.url));

export default {
  name: 'sse',
  order: 40,
  title: `SSE fan-out: ${SUBSCRIBERS} subscribers, ${EVENTS.toLocaleString('en-US')} events at ${RATE}/s`,
  async setup(h) {
    const { root } = await h.seededProject(0, { apiKeys: KEYS });
    const svc = await h.startSvc(root);
    const dbFile = join(root, '.svc', 'state.sqlite');
    const headers = { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' };
    const bodies = Array.from({ length: 16 }, (_, i) => JSON.stringify({ title: `fan-out ${i}` }));
    let round = 0;
    const fanOut = async (events) => {
      const afterId = await lastEventId(h, dbFile);
      const child = spawn(
        process.execPath,
        [SUBSCRIBER, JSON.stringify({ url: svc.url, keys: KEYS, count: SUBSCRIBERS, expected: events, afterId, db: dbFile, filter: 'task:created', deadlineMs: 120_000 })],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      h.onCleanup(() => child.kill('SIGKILL'));
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const first = await lines.next();
      if (first.done || !JSON.parse(first.value).ready) throw new Error('subscribers did not connect');
      let peak = svc.rss();
      const sampler = setInterval(() => (peak = Math.max(peak, svc.rss())), 50);
      const emitted = await h.load({ url: svc.url, method: 'POST', path: '/api/v1/tasks', bodies, headers, connections: 8, amount: events, overallRate: RATE });
      const result = await lines.next();
      clearInterval(sampler);
      if (result.done) throw new Error('subscribers printed no result');
      const r = JSON.parse(result.value);
      if (emitted.non2xx || emitted.errors) throw new Error(`emitter: ${emitted.non2xx} non-2xx, ${emitted.errors} errors (round ${round})`);
      return { ...r, rss: peak, emitRate: emitted.rps };
    };
    return {
      // A tenth of the events warms the daemon, its statements and the subscribers' connections.
      warmup: () => fanOut(EVENTS / 10),
      svc: () => (round++, fanOut(EVENTS)),
      close: () => svc.stop(),
    };
  },
  targets: [
    { metric: 'lost', label: 'events not delivered', unit: 'of 4,000,000', op: '==', value: 0 },
    { metric: 'disorder', label: 'out of order', op: '==', value: 0 },
    { metric: 'p99', label: 'p99 emit → receive', unit: 'ms', op: '<', value: 20 },
    { metric: 'rss', label: 'daemon peak RSS', unit: 'MiB', op: '<', value: 250 },
    { metric: 'emitRate', label: 'events emitted', unit: '/s' },
  ],
};

async function lastEventId(_h, dbFile) {
  const { default: Database } = await import('../../dist/src/db/sqlite.js');
  const db = new Database(dbFile, { readonly: true });
  const r = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'").get();
  db.close();
  return r?.seq ?? 0;
}
