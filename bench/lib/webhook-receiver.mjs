// A webhook receiver for bench/scenarios/webhooks.mjs, its own process: answers every POST 200 at
// once and counts. GET /stats → {count, firstMs, lastMs} (performance.now() of the first and last
// delivery); POST /reset starts a new count. Prints {"port":N} when listening.
import { createServer } from 'node:http';

let count = 0;
let firstMs = 0;
let lastMs = 0;
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') return res.end(JSON.stringify({ count, firstMs, lastMs }));
  if (req.method === 'POST' && req.url === '/reset') {
    count = 0;
    return res.end('{}');
  }
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    const now = performance.now();
    if (count++ === 0) firstMs = now;
    lastMs = now;
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'));
