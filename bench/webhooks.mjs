// npm run bench -- webhooks (or node bench/webhooks.mjs after npm run build)
//
// Issue 11 item 8. The daemon (`svc serve`, its own process) delivers N webhook deliveries to a
// local receiver that answers 200 at once; the baseline is a plain undici loop posting the same
// signed bodies at the same concurrency to the same receiver. Reported: deliveries per second of
// each and their ratio (target ≥ 0.5×), and the p99 latency of API requests made while the worker
// runs against the same requests with the worker idle (target: no more than 5 ms worse).
// Deliveries are seeded as the EventLog sink writes them (pending rows), with the daemon stopped,
// so the clock measures delivery alone. Each side runs ROUNDS times; the median round is reported.
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';

const dist = new URL('../dist/src/', import.meta.url);
const { uuidv7 } = await import(new URL('lib/ids.js', dist).href);
const { deliveryHeaders } = await import(new URL('resources/webhooks/sign.js', dist).href);
const SVC = new URL('../bin/svc', import.meta.url).pathname;

const N = Number(process.env.BENCH_DELIVERIES ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = 16;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))];
};

// The receiver: answers 200 at once, and tells whoever waits when `target` requests have come.
let count = 0;
let target = Infinity;
let onDone = () => {};
let firstAt = 0n;
const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    if (++count === 1) firstAt = process.hrtime.bigint();
    if (count === target) onDone();
  });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
const rxUrl = `http://127.0.0.1:${receiver.address().port}/hook`;
const expect = (n) => {
  count = 0;
  target = n;
  return new Promise((r) => (onDone = r));
};

const root = mkdtempSync(join(tmpdir(), 'svc-bench-webhooks-'));
writeFileSync(join(root, 'project.json'), JSON.stringify({ name: 'bench', webhooks: { concurrency: CONCURRENCY, retryBaseMs: 1000 } }));
const env = { ...process.env, SVC_VAULT_KEY: 'ab'.repeat(32), SVC_KEYCHAIN: 'off', NO_COLOR: '1' };

function serve() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC, 'serve', '--port', '0'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const m = /"msg":"listening","url":"([^"]+)"/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.stderr.on('data', (c) => (out += c));
    child.on('exit', (code) => reject(new Error(`svc serve exited ${code}: ${out}`)));
  });
}
const stop = (child) => new Promise((r) => (child.once('exit', r), child.kill('SIGTERM')));

let daemon = await serve();
const key = readFileSync(join(root, '.svc', 'local.key'), 'utf8').trim();
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const created = await (await fetch(`${daemon.url}/v1/webhooks`, { method: 'POST', headers: auth, body: JSON.stringify({ url: rxUrl, events: ['team:created'] }) })).json();
const webhook = created.data;
await stop(daemon.child);

// The bodies, as the sink writes them.
const bodies = Array.from({ length: N }, (_, i) => JSON.stringify({ event: 'team:created', data: { name: `team-${i}` }, timestamp: new Date().toISOString() }));

function seed() {
  const db = new Database(join(root, '.svc', 'state.sqlite'));
  const insert = db.prepare(
    "INSERT INTO webhook_deliveries (id, webhook_id, event_id, event, body, status, attempts, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, 'team:created', ?, 'pending', 0, ?, ?, ?)",
  );
  const now = new Date().toISOString();
  db.transaction(() => bodies.forEach((b, i) => insert.run(uuidv7(), webhook.id, i + 1, b, Date.now(), now, now)))();
  db.close();
}

/** API latency probe: sequential GET /api/v1/tasks?limit=50 until `until` resolves. */
async function probe(url, until) {
  const lat = [];
  let done = false;
  until.then(() => (done = true));
  while (!done) {
    const t = process.hrtime.bigint();
    const res = await request(`${url}/api/v1/tasks?limit=50`, { headers: auth });
    await res.body.dump();
    lat.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return lat;
}

async function svcRound() {
  seed();
  const all = expect(N);
  daemon = await serve();
  const latBusy = probe(daemon.url, all);
  await all;
  // From the first delivery received to the last: the daemon's start-up is not delivery time.
  const ms = Number(process.hrtime.bigint() - firstAt) / 1e6;
  const busy = await latBusy;
  // The same probe with the worker idle.
  const idle = await probe(daemon.url, new Promise((r) => setTimeout(r, 1500)));
  await stop(daemon.child);
  return { rate: (N / ms) * 1000, busyP99: pct(busy, 0.99), idleP99: pct(idle, 0.99), probes: busy.length };
}

async function baselineRound() {
  const agent = new Agent({ connections: 256, keepAliveTimeout: 10_000 });
  const secret = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
  const all = expect(N);
  let next = 0;
  const worker = async () => {
    while (next < N) {
      const i = next++;
      const id = uuidv7();
      const headers = deliveryHeaders({ deliveryId: id, event: 'team:created', body: bodies[i], secrets: [secret], t: Math.floor(Date.now() / 1000) });
      const res = await request(rxUrl, { method: 'POST', headers, body: bodies[i], dispatcher: agent, headersTimeout: 10_000, bodyTimeout: 10_000 });
      await res.body.dump();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  await all;
  const ms = Number(process.hrtime.bigint() - firstAt) / 1e6;
  await agent.close();
  return { rate: (N / ms) * 1000 };
}

const svcRounds = [];
const baseRounds = [];
for (let r = 0; r < ROUNDS; r++) {
  baseRounds.push(await baselineRound());
  svcRounds.push(await svcRound());
}
const svcRate = median(svcRounds.map((x) => x.rate));
const baseRate = median(baseRounds.map((x) => x.rate));
const busy = median(svcRounds.map((x) => x.busyP99));
const idle = median(svcRounds.map((x) => x.idleP99));
console.log(`\nwebhooks: ${N} deliveries to a local receiver answering 200, concurrency ${CONCURRENCY}, median of ${ROUNDS} rounds`);
console.log(`  svc worker      ${svcRate.toFixed(0).padStart(6)} deliveries/s  rounds: ${svcRounds.map((x) => x.rate.toFixed(0)).join(', ')}`);
console.log(`  undici loop     ${baseRate.toFixed(0).padStart(6)} deliveries/s  rounds: ${baseRounds.map((x) => x.rate.toFixed(0)).join(', ')}`);
console.log(`  ratio           ${(svcRate / baseRate).toFixed(2)}x the baseline (target ≥ 0.5x)`);
console.log(`  API p99 while delivering ${busy.toFixed(2)} ms vs idle ${idle.toFixed(2)} ms: +${(busy - idle).toFixed(2)} ms (target ≤ 5 ms); ${svcRounds.map((x) => x.probes).join('/')} probes`);

receiver.close();
rmSync(root, { recursive: true, force: true });
