// node bench/steps.mjs [--seconds N] [--frequency HZ]
//
// What each step of the request pipeline (src/kernel/server.ts REQUEST_STEPS) costs under the read
// scenario's load (GET /api/v1/tasks/{id} over 1,000 ids of 10,000 tasks, 32 connections): the
// daemon runs with --perf-basic-prof (V8 names its compiled functions for perf), `perf record -e
// cpu-clock -g` samples it while the load runs, and each step's share of the samples, with
// everything it called, is turned into µs of CPU per request. cpu-clock counts a thread only while
// it runs, so unlike a V8 CPU profile (wall time) a step is not charged with the time the daemon
// waited for a core; a busier machine still raises every figure somewhat (caches, wake-ups), and
// perf's own sampling adds to each: compare steps of one run, or two builds run one after the other. KEEP_PERF=<file> keeps perf's data there
// (for `perf report -i <file>`). Needs Linux perf (/usr/bin/perf). Not part of `npm run bench`;
// docs/performance.md has the table it prints.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as h from './lib/harness.mjs';

const seconds = Number(h.arg('seconds', 4));
const frequency = Number(h.arg('frequency', 4000));
const data = process.env.KEEP_PERF || join(tmpdir(), `svc-steps-${process.pid}.perf`);

process.on('SIGINT', async () => {
  await h.cleanupAll();
  process.exit(130);
});

// Each step's run() in the compiled server.js, by its line: `name: 'guards'`, then its `run(`.
const serverJs = join(h.REPO, 'dist/src/kernel/server.js');
const stepAt = new Map();
let name;
readFileSync(serverJs, 'utf8')
  .split('\n')
  .forEach((line, i) => {
    const m = /name: '([a-z]+)'/.exec(line);
    if (m) name = m[1];
    if (name && /^\s+(async )?run\(/.test(line)) {
      stepAt.set(i + 1, name);
      name = undefined;
    }
  });

const { root, ids } = await h.seededProject(10_000);
const svc = await h.startSvc(root, { nodeArgs: ['--perf-basic-prof'] });
const opts = { url: svc.url, paths: ids.filter((_, i) => i % 10 === 0).map((id) => `/api/v1/tasks/${id}`), headers: { authorization: `Bearer ${svc.key}` }, connections: 32 };
await h.load({ ...opts, seconds: 3 });
const rec = spawn('perf', ['record', '-e', 'cpu-clock', '-F', String(frequency), '-g', '-p', String(svc.pid), '-o', data], { stdio: 'ignore' });
await h.sleep(300);
const cpu0 = h.cpuMs(svc.pid);
const m = await h.load({ ...opts, seconds });
const cpuUs = ((h.cpuMs(svc.pid) - cpu0) * 1000) / m.requests;
rec.kill('SIGINT');
await new Promise((r) => rec.once('exit', r));
await svc.stop();
await h.cleanupAll();

const report = (args) => execFileSync('perf', ['report', '-i', data, '--stdio', '-g', 'none', ...args], { maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
const total = report(['--no-children', '--sort', 'dso', '-n'])
  .split('\n')
  .filter((l) => /^\s+[\d.]+%\s+\d+/.test(l))
  .reduce((n, l) => n + Number(l.trim().split(/\s+/)[1]), 0);
const usPerRequest = (pct) => (pct / 100) * ((total * 1e6) / frequency / m.requests);
/** Inclusive share of each symbol (a function and all it called). */
const inclusive = new Map();
for (const line of report(['--children', '--sort', 'sym']).split('\n')) {
  const r = /^\s+([\d.]+)%\s+([\d.]+)%\s+\[[^\]]*\]\s+(.*)$/.exec(line);
  if (r) inclusive.set(r[3].trim(), (inclusive.get(r[3].trim()) ?? 0) + Number(r[1]));
}
// perf read V8's names from /tmp/perf-<pid>.map, which the daemon wrote.
rmSync(`/tmp/perf-${svc.pid}.map`, { force: true });
if (!process.env.KEEP_PERF) rmSync(data, { force: true });
const find = (re) => [...inclusive].filter(([k]) => re.test(k)).reduce((n, [, v]) => Math.max(n, v), 0);
const step = (s) => {
  const line = [...stepAt].find(([, n]) => n === s)?.[0];
  return find(new RegExp(`JS:[*~^]?run file://.*/dist/src/kernel/server\\.js:${line}:`));
};
const rows = [
  ['request id (uuidv7)', find(/JS:[*~^]?uuidv7 /)],
  ...['guards', 'route', 'auth', 'body', 'validate', 'handle', 'write'].map((s) => [`step ${s}`, step(s)]),
  ['  in handle: the task read in SQLite (better-sqlite3)', find(/Statement::JS_(all|get)$/)],
  ['  in write: the socket write (kernel time included)', find(/node::StreamBase::Writev$/)],
  ["the response's close: the request's log line, connection bookkeeping", find(/JS:[*~^]?emitCloseNT /)],
  ['the log written out (lineBuffer flush, LogFile)', Math.max(find(/JS:[*~^]?flush file:.*kernel\/log\.js/), find(/JS:[*~^]?next file:.*kernel\/log-file\.js/))],
  ['garbage collection', find(/Heap::CollectGarbage|ScavengerCollector::CollectGarbage/)],
];
console.log(`${m.requests} requests at ${Math.round(m.rps)}/s; the daemon's CPU per request (from /proc): ${cpuUs.toFixed(1)} µs; perf saw ${usPerRequest(100).toFixed(1)} µs (${total} samples)`);
console.log('| part of a request | µs of CPU per request (with all it calls) |');
console.log('| --- | ---: |');
for (const [what, pct] of rows) console.log(`| ${what} | ${usPerRequest(pct).toFixed(2)} |`);
