// node bench/instructions.mjs [--requests N] [--warmup N] [--connections N] [--side svc|baseline]
//
// Instructions per request of the read scenario's request (GET /api/v1/tasks/{id} over 1,000 ids of
// 10,000 tasks), counted by valgrind's callgrind in the server process (every thread of it): the
// daemon runs under callgrind, takes `warmup` requests (so V8 has optimised the hot path), has its
// counters zeroed, takes `requests` more, and dumps. Unlike throughput or CPU time, the count does
// not move with other load on the machine, so differences of a few per cent between two builds
// show. `--side baseline` counts the plain server (bench/baselines/tasks-server.mjs) the same way.
// `--keep` keeps callgrind's file of the measured requests (for callgrind_annotate) and prints its
// name. Needs valgrind (callgrind_control); a run takes a few minutes. Not part of `npm run bench`.
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as h from './lib/harness.mjs';

const requests = Number(h.arg('requests', 3_000));
const warmup = Number(h.arg('warmup', 30_000));
const connections = Number(h.arg('connections', 8));
const side = h.arg('side', 'svc');
const keep = process.argv.includes('--keep');
const out = join(tmpdir(), `svc-callgrind-${process.pid}`);
const VALGRIND = ['valgrind', '--tool=callgrind', `--callgrind-out-file=${out}.%p`, '--separate-threads=yes', '--dump-instr=no', '--compress-strings=no'];

process.on('SIGINT', async () => {
  await h.cleanupAll();
  process.exit(130);
});

const { root, ids } = await h.seededProject(10_000);
let server;
if (side === 'svc') {
  server = await h.startSvc(root, { command: [...VALGRIND, process.execPath, h.SVC_BIN], timeoutMs: 600_000 });
} else {
  const key = 'bench-baseline-key-0123456789';
  const copy = h.copyStateDb(root);
  const child = spawn(VALGRIND[0], [...VALGRIND.slice(1), process.execPath, join(h.REPO, 'bench/baselines/tasks-server.mjs'), JSON.stringify({ db: copy, key })], {
    // valgrind's own lines go to stderr, which is dropped.
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  h.onCleanup(() => child.kill('SIGKILL'));
  const port = await new Promise((resolve) => child.stdout.once('data', (c) => resolve(JSON.parse(String(c)).port)));
  server = { url: `http://127.0.0.1:${port}`, pid: child.pid, key, stop: async () => child.kill('SIGTERM') };
}
const opts = { paths: ids.filter((_, i) => i % 10 === 0).map((id) => `/api/v1/tasks/${id}`), headers: { authorization: `Bearer ${server.key}` }, connections };
const w = await h.load({ url: server.url, ...opts, amount: warmup });
if (w.non2xx || w.errors) throw new Error(`warm-up: ${w.non2xx} non-2xx, ${w.errors} errors`);
execFileSync('callgrind_control', ['-z', String(server.pid)], { stdio: 'ignore' });
const m = await h.load({ url: server.url, ...opts, amount: requests });
if (m.non2xx || m.errors) throw new Error(`measured: ${m.non2xx} non-2xx, ${m.errors} errors`);
execFileSync('callgrind_control', ['-d', String(server.pid)], { stdio: 'ignore' });
// The first dump holds what ran since the counters were zeroed (the start and the warm-up went to
// none), a file per thread: the main thread's is -01; the others are V8's compiler and collector
// helpers and libuv's pool (the log's writes).
const dumped = readdirSync(tmpdir()).filter((f) => f.startsWith(`svc-callgrind-${process.pid}.${server.pid}.1-`));
const count = (f) => Number(/^(?:summary|totals): (\d+)/m.exec(readFileSync(join(tmpdir(), f), 'utf8'))?.[1] ?? 0);
const ir = dumped.reduce((n, f) => n + count(f), 0);
const main = dumped.filter((f) => f.endsWith('.1-01')).reduce((n, f) => n + count(f), 0);
await server.stop();
await h.cleanupAll();
const kept = join(tmpdir(), `svc-callgrind-${process.pid}.${server.pid}.1-01`);
for (const f of readdirSync(tmpdir()).filter((x) => x.startsWith(`svc-callgrind-${process.pid}.`))) if (!(keep && join(tmpdir(), f) === kept)) rmSync(join(tmpdir(), f), { force: true });
const per = (n) => Math.round(n / m.requests);
console.log(JSON.stringify({ side, requests: m.requests, perRequest: per(ir), mainThreadPerRequest: per(main), ...(keep ? { file: kept } : {}) }));
