// A webhook receiver for bench/scenarios/webhooks.mjs, its own process: answers every POST 200 at
// once and counts. GET /stats → {count, firstMs, lastMs} (performance.now() of the first and last
// delivery); POST /reset starts a new count. Prints {"port":N} when listening.
// Arguments (JSON): {"hangMs": N} holds every POST that long before answering (a receiver that
// hangs); {"latency": true} keeps, per delivery, the time from its event (the envelope's
// timestamp, same machine clock) to its arrival: GET /latencies → [ms, …].
import { createServer } from 'node:http';

const { hangMs = 0, latency = false } = JSON.parse(process.argv[2] ?? '{}');
let count = 0;
let firstMs = 0;
let lastMs = 0;
let latencies = [];
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') return res.end(JSON.stringify({ count, firstMs, lastMs }));
  if (req.method === 'GET' && req.url === '/latencies') return res.end(JSON.stringify(latencies));
  if (req.method === 'POST' && req.url === '/reset') {
    count = 0;
    latencies = [];
    return res.end('{}');
  }
  const chunks = [];
  req.on('data', (c) => latency && chunks.push(c));
  req.on('end', () => {
    const now = performance.now();
    if (count++ === 0) firstMs = now;
    lastMs = now;
    if (latency) latencies.push(Date.now() - Date.parse(JSON.parse(Buffer.concat(chunks).toString()).timestamp));
    const answer = () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    if (hangMs) setTimeout(answer, hangMs);
    else answer();
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'));
