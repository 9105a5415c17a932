// SSE subscribers for the runs bench's chatty run, their own process: opens `count` streams to
// /v1/events with `filter` (run:), prints {"ready":true} once all are open, and reads every
// run:activity frame. Two latencies: line → receive (each text item starts with the time the agent
// printed it: stdout, the run log's batching, the event, SSE), and emit → receive (the event's
// created_at in the state database, written in the flush's transaction: SSE delivery alone). When
// every stream has seen run:finished (or at the deadline) it prints what it saw.
import Database from '../../dist/src/db/sqlite.js';
import { sseReader } from '../../dist/src/lib/sse-read.js';
import { request } from 'node:http';

const { url, key, count, filter, db: dbFile, afterId, expectedItems, deadlineMs } = JSON.parse(process.argv[2]);
const now = () => performance.timeOrigin + performance.now();

const subs = [];
let open = 0;
let finishedStreams = 0;
let done = false;

for (let i = 0; i < count; i++) {
  const s = { items: 0, lineLat: [], events: [], at: 0, finished: false, closed: false, lastSeq: 0, disorder: 0 };
  subs.push(s);
  const req = request(`${url}/v1/events?filter=${encodeURIComponent(filter)}`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, agent: false });
  req.on('response', (res) => {
    if (res.statusCode !== 200) {
      process.stderr.write(`subscriber ${i}: status ${res.statusCode}\n`);
      process.exit(1);
    }
    if (++open === count) process.stdout.write(JSON.stringify({ ready: true }) + '\n');
    const reader = sseReader((m) => frame(s, m));
    res.on('data', (chunk) => {
      s.at = now();
      reader.push(chunk);
    });
    res.on('close', () => (s.closed = true));
  });
  req.on('error', (err) => {
    s.closed = true;
    process.stderr.write(`subscriber ${i}: ${err.message}\n`);
  });
  req.end();
}

/** One message; `s.at` is when the chunk that completed it arrived. */
function frame(s, { id, event: name, data }) {
  const t = s.at;
  if (name === 'run:activity') {
    s.events.push(Number(id), t);
    for (const item of JSON.parse(data).items) {
      if (item.seq <= s.lastSeq) s.disorder++;
      s.lastSeq = item.seq;
      if (item.kind !== 'text') continue;
      s.items++;
      const printed = Number.parseFloat(item.text);
      if (Number.isFinite(printed)) s.lineLat.push(t - printed);
    }
  } else if (name === 'run:finished' && !s.finished) {
    s.finished = true;
    if (++finishedStreams === count) setImmediate(finish);
  }
}

const timer = setTimeout(finish, deadlineMs);

function finish() {
  if (done) return;
  done = true;
  clearTimeout(timer);
  const db = new Database(dbFile, { readonly: true });
  const emitted = new Map();
  for (const r of db.prepare("SELECT id, created_at FROM events WHERE id > ? AND name = 'run:activity'").iterate(afterId)) emitted.set(r.id, Date.parse(r.created_at));
  db.close();
  const line = [];
  const event = [];
  let items = 0;
  let disorder = 0;
  for (const s of subs) {
    items += s.items;
    disorder += s.disorder;
    for (const l of s.lineLat) line.push(l);
    for (let j = 0; j < s.events.length; j += 2) event.push(s.events[j + 1] - (emitted.get(s.events[j]) ?? NaN));
  }
  const stats = (a) => {
    a.sort((x, y) => x - y);
    const pick = (p) => (a.length ? a[Math.min(a.length - 1, Math.floor(a.length * p))] : NaN);
    return { p50: pick(0.5), p99: pick(0.99), max: a.length ? a[a.length - 1] : NaN };
  };
  process.stdout.write(
    JSON.stringify({
      items,
      lost: count * expectedItems - items,
      disorder,
      streamsFinished: finishedStreams,
      eventsPerStream: subs[0] ? subs[0].events.length / 2 : 0,
      line: stats(line),
      event: stats(event),
    }) + '\n',
  );
  process.exit(0);
}
