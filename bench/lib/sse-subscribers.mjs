// SSE subscribers, run as their own process: opens `count` streams to /v1/events, prints
// {"ready":true} once all are open, records when each frame arrives, and when every stream has
// `expected` events (or at the deadline) prints what it saw. Emit time is the event's created_at in
// the state database (written in the emitting transaction), so emit → receive is measured without
// trusting the daemon or the emitter for timing. Frames are scanned for their `id:` line only.
import Database from '../../dist/src/db/sqlite.js';
import { request } from 'node:http';

const o = JSON.parse(process.argv[2]);
const { url, keys, count, expected, afterId, db: dbFile, filter, deadlineMs } = o;
const now = () => performance.timeOrigin + performance.now();

const subs = [];
let open = 0;
let complete = 0;
let finished = false;

for (let i = 0; i < count; i++) {
  const s = { ids: new Float64Array(expected), at: new Float64Array(expected), n: 0, buf: '', disorder: 0, closed: false };
  subs.push(s);
  const req = request(`${url}/v1/events?filter=${encodeURIComponent(filter)}`, {
    headers: { authorization: `Bearer ${keys[i % keys.length]}`, accept: 'text/event-stream' },
    agent: false,
  });
  req.on('response', (res) => {
    if (res.statusCode !== 200) {
      process.stderr.write(`subscriber ${i}: status ${res.statusCode}\n`);
      process.exit(1);
    }
    res.setEncoding('utf8');
    if (++open === count) process.stdout.write(JSON.stringify({ ready: true }) + '\n');
    res.on('data', (chunk) => {
      const t = now();
      const text = s.buf + chunk;
      let from = 0;
      for (;;) {
        const end = text.indexOf('\n\n', from);
        if (end < 0) break;
        if (text.startsWith('id: ', from)) {
          const id = Number(text.slice(from + 4, text.indexOf('\n', from)));
          if (s.n < expected) {
            if (s.n > 0 && id <= s.ids[s.n - 1]) s.disorder++;
            s.ids[s.n] = id;
            s.at[s.n] = t;
            s.n++;
            if (s.n === expected && ++complete === count) finish();
          }
        }
        from = end + 2;
      }
      s.buf = text.slice(from);
    });
    res.on('close', () => (s.closed = true));
  });
  req.on('error', (err) => {
    s.closed = true;
    process.stderr.write(`subscriber ${i}: ${err.message}\n`);
  });
  req.end();
}

const timer = setTimeout(finish, deadlineMs);

function finish() {
  if (finished) return;
  finished = true;
  clearTimeout(timer);
  const db = new Database(dbFile, { readonly: true });
  const emitted = new Map();
  for (const r of db.prepare('SELECT id, created_at FROM events WHERE id > ? ORDER BY id').iterate(afterId)) emitted.set(r.id, Date.parse(r.created_at));
  db.close();
  let delivered = 0;
  let disorder = 0;
  let dropped = 0;
  for (const s of subs) {
    delivered += s.n;
    disorder += s.disorder;
    if (s.closed && s.n < expected) dropped++;
  }
  const lat = new Float64Array(delivered);
  let k = 0;
  for (const s of subs) for (let j = 0; j < s.n; j++) lat[k++] = s.at[j] - (emitted.get(s.ids[j]) ?? NaN);
  lat.sort();
  const pick = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] : NaN);
  process.stdout.write(JSON.stringify({ delivered, lost: count * expected - delivered, disorder, dropped, p50: pick(0.5), p99: pick(0.99), max: lat[lat.length - 1] ?? NaN }) + '\n');
  process.exit(0);
}
