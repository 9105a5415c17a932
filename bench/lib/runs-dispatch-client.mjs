// The runs bench's dispatch client, its own process: creates `count` tasks assigned to `agent`,
// one at a time, each as soon as the previous one's agent process was spawned (so no task waits for
// another's slot: what is measured is dispatch, not a queue), or with `untilFinished` once its run
// finished (a project that is not a git repository runs one at a time). It notes when each POST's answer
// arrived (Date.now(), the clock the daemon stamps startedAt with). Against svc it learns of the
// spawn from the run:started event on an SSE stream it holds; against the baseline from its
// GET /wait/<taskId>. Prints [{taskId, answeredAt, spawnedAt?, worktreeMs?}] (svc's spawn times
// are read from its state by the bench).
import { request } from 'node:http';
import { sseReader } from '../../dist/src/lib/sse-read.js';

const { url, key, agent, count, side, prefix = 'dispatch', untilFinished = false } = JSON.parse(process.argv[2]);
const awaited = untilFinished ? 'run:finished' : 'run:started';
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

/** Task ids of the run:started (or run:finished) frames, for svc. */
const started = new Set();
let notify = null;
let stream = null;
if (side === 'svc') {
  await new Promise((resolve, reject) => {
    stream = request(`${url}/v1/events?filter=${awaited}`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, agent: false });
    stream.on('response', (res) => {
      if (res.statusCode !== 200) return reject(new Error(`SSE status ${res.statusCode}`));
      const reader = sseReader((m) => {
        started.add(JSON.parse(m.data).taskId);
        notify?.();
      });
      res.on('data', (chunk) => reader.push(chunk));
      resolve();
    });
    stream.on('error', reject);
    stream.end();
  });
}

async function spawnedOf(taskId) {
  if (side !== 'svc') return (await fetch(`${url}/wait/${taskId}`, { headers, signal: AbortSignal.timeout(30_000) })).json();
  const deadline = Date.now() + 30_000;
  while (!started.has(taskId)) {
    if (Date.now() > deadline) throw new Error(`no ${awaited} for task ${taskId} within 30 s`);
    await new Promise((r) => {
      notify = r;
      setTimeout(r, 1_000);
    });
  }
  return {};
}

const out = [];
for (let i = 0; i < count; i++) {
  const res = await fetch(`${url}/api/v1/tasks`, { method: 'POST', headers, body: JSON.stringify({ title: `${prefix} ${i}`, assignTo: agent }) });
  const body = await res.json();
  const answeredAt = Date.now();
  if (res.status !== 201) throw new Error(`POST /api/v1/tasks answered ${res.status}: ${JSON.stringify(body)}`);
  const taskId = body.data.id;
  out.push({ taskId, answeredAt, ...(await spawnedOf(taskId)) });
}
stream?.destroy();
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
