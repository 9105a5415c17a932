import { lookup as dnsLookup } from 'node:dns';
import { parentPort, workerData } from 'node:worker_threads';
import { Agent } from 'undici';
import { monotonic } from '../../lib/clock.js';
import { postDelivery } from './post.js';
import { guardedLookup, hostsLookup, type ThreadRequest, type ThreadResult } from './send.js';

// The delivery thread: every delivery's network work (connecting, TLS, writing, reading the answer)
// happens here, off the daemon's main thread, so API requests never queue behind it. One pooled
// Agent; the name lookup refuses forbidden addresses.

const { hosts } = (workerData ?? {}) as { hosts?: Record<string, string> };
const agent = new Agent({
  connect: { lookup: guardedLookup(hosts ? hostsLookup(hosts, dnsLookup) : dnsLookup) },
  keepAliveTimeout: 10_000,
  // One origin may take every slot; the daemon's worker, not the pool, bounds concurrency.
  connections: 256,
});
parentPort!.on('message', (m: ThreadRequest) => {
  const started = monotonic();
  void postDelivery(agent, m).then((sent) => {
    const r: ThreadResult = { id: m.id, sent, durationMs: Math.round(monotonic() - started) };
    parentPort!.postMessage(r);
  });
});
// Every module is loaded: the daemon may stop this thread now without leaving a file open.
parentPort!.postMessage({ loaded: true });
