// The load generator, always run as its own process (harness.load). autocannon drives the
// connections; latencies are taken from its per-response hrtime durations, not its 1 ms histogram,
// so sub-millisecond p99s compare honestly. Prints one JSON object on stdout.
import autocannon from 'autocannon';

const o = JSON.parse(process.argv[2]);
const requests = [];
const paths = o.paths ?? [o.path ?? '/'];
const bodies = o.bodies ?? (o.body !== undefined ? [o.body] : undefined);
// One request template per path/body.
const count = Math.max(paths.length, bodies?.length ?? 1);
for (let i = 0; i < count; i++) {
  requests.push({
    method: o.method ?? 'GET',
    path: paths[i % paths.length],
    headers: o.headers ?? {},
    ...(bodies ? { body: bodies[i % bodies.length] } : {}),
  });
}

const latencies = [];
let non2xx = 0;
// With several templates each connection cycles through them in order.
const instance = autocannon({
  url: o.url,
  connections: o.connections ?? 32,
  pipelining: 1,
  requests,
  ...(o.amount ? { amount: o.amount } : { duration: o.seconds ?? 3 }),
  ...(o.overallRate ? { overallRate: o.overallRate } : {}),
});
instance.on('response', (_client, status, _bytes, ms) => {
  if (status >= 200 && status < 300) latencies.push(ms);
  else non2xx++;
});
const result = await new Promise((resolve, reject) => instance.once('done', resolve).once('error', reject));
latencies.sort((a, b) => a - b);
const pick = (p) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] : NaN);
const seconds = result.duration;
process.stdout.write(
  JSON.stringify({
    rps: latencies.length / seconds,
    p50: pick(0.5),
    p99: pick(0.99),
    max: latencies.length ? latencies[latencies.length - 1] : NaN,
    requests: latencies.length,
    errors: result.errors + result.timeouts,
    non2xx,
  }) + '\n',
);
