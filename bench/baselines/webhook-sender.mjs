// The raw baseline for webhook delivery: a plain undici loop posting the same signed bodies (the
// same signing code, both header schemes) at the same concurrency through one pooled Agent, with no
// database, queue or attempt log. Run as its own process; prints {"sent":N} when done.
import { Agent, request } from 'undici';
import { uuidv7 } from '../../dist/src/lib/ids.js';
import { deliveryHeaders } from '../../dist/src/resources/webhooks/sign.js';

const { url, n, concurrency, secret } = JSON.parse(process.argv[2]);
const agent = new Agent({ connections: 256, keepAliveTimeout: 10_000 });
const timestamp = new Date().toISOString();
let next = 0;
let sent = 0;
async function worker() {
  while (next < n) {
    const i = next++;
    const body = JSON.stringify({ event: 'team:created', data: { name: `team-${i}` }, timestamp });
    const headers = deliveryHeaders({ deliveryId: uuidv7(), event: 'team:created', body, secrets: [secret], t: Math.floor(Date.now() / 1000) });
    const res = await request(url, { method: 'POST', headers, body, dispatcher: agent, headersTimeout: 10_000, bodyTimeout: 10_000 });
    await res.body.dump();
    if (res.statusCode === 200) sent++;
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
await agent.close();
process.stdout.write(JSON.stringify({ sent }) + '\n');
