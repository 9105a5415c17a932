// Sequential chat requests from their own process, timing each one: the whole answer for a plain
// completion, the first content chunk for a stream (the first piece holding `marker`: a chat
// chunk's content, or a Responses text delta). Prints {p50, p99, n} in ms.
import { request } from 'undici';

const { url, headers, body, stream, count, marker = '"content":"ok"' } = JSON.parse(process.argv[2]);
const times = [];
for (let i = 0; i < count; i++) {
  const t0 = process.hrtime.bigint();
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ ...body, stream }) });
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${await res.body.text()}`);
  if (stream) {
    let seen = '';
    for await (const piece of res.body) {
      seen += piece;
      if (seen.includes(marker)) break; // the first content chunk
    }
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    await res.body.dump().catch(() => undefined);
  } else {
    await res.body.text();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
}
times.sort((a, b) => a - b);
const at = (p) => times[Math.min(times.length - 1, Math.floor(times.length * p))];
process.stdout.write(JSON.stringify({ p50: at(0.5), p99: at(0.99), n: times.length }) + '\n');
