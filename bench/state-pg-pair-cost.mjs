// node bench/state-pg-pair-cost.mjs [--rounds N]
//
// Why a second daemon on one PostgreSQL state adds little on this machine (docs/performance.md,
// "State on PostgreSQL without blocking"): state-pg-pair's reads and writes against one daemon,
// then split over two, and for each the CPU per request of every process taking part (the
// daemons, PostgreSQL's backends, the load generators), how much of the machine stayed idle, and
// what the state's sessions were doing (pg_stat_activity sampled every 5 ms: running, waiting on a
// lock, idle in a transaction while the daemon works). Prints one JSON line a measurement. Needs
// PostgreSQL (scripts/throwaway-postgres.mjs); about a minute. Not part of `npm run bench`.
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import * as h from './lib/harness.mjs';
import * as S from './lib/state-pg.mjs';

const rounds = Number(h.arg('rounds', 2));
const pgs = await S.startStatePostgres(h);
const { url, ids } = await S.seededStateDb(h, pgs, 'svc_state', S.TASKS);
const env = pgs.env(url);
const a = await h.startSvc(h.makeProject(), { env });
const b = await h.startSvc(h.makeProject(), { env });
const mon = new pg.Client({ connectionString: url });
await mon.connect();
const dd = (await mon.query("SELECT current_setting('data_directory') AS d")).rows[0].d;
const postmaster = Number(readFileSync(`${dd}/postmaster.pid`, 'utf8').split('\n')[0]);
const stat = (pid) => {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
};
/** ms of CPU from /proc/<pid>/stat fields i and i + 1 (10 ms ticks): 11 its own (user + system), 13 its children's it waited for. */
const ms = (f, i) => (Number(f[i]) + Number(f[i + 1])) * 10;
/** PostgreSQL's CPU: the postmaster's, its live backends', and what its exited backends used. */
function pgCpu() {
  let t = ms(stat(postmaster), 11) + ms(stat(postmaster), 13);
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const f = stat(d);
    if (f && Number(f[1]) === postmaster) t += ms(f, 11) + ms(f, 13);
  }
  return t;
}
/** The machine's idle and total jiffies (every process on it, other engineers' included). */
const machine = () => {
  const l = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { idle: l[3] + l[4], total: l.reduce((x, y) => x + y, 0) };
};
const self = () => ms(stat(process.pid), 13); // reaped children: the load generators
/** Until `stop.done`: what the daemons' state sessions do, on average over the samples. */
async function sampleWaits(stop) {
  const c = {};
  let n = 0;
  while (!stop.done) {
    const r = await mon.query("SELECT state, wait_event_type, wait_event FROM pg_stat_activity WHERE application_name = 'svc state' AND pid <> pg_backend_pid()");
    for (const x of r.rows) {
      const k = x.state === 'active' ? (x.wait_event_type ? `active, waiting ${x.wait_event_type}/${x.wait_event}` : 'active, running') : x.state;
      c[k] = (c[k] ?? 0) + 1;
    }
    n++;
    await h.sleep(5);
  }
  return Object.fromEntries(
    Object.entries(c)
      .map(([k, v]) => [k, +(v / n).toFixed(2)])
      .sort((x, y) => y[1] - x[1]),
  );
}
/** The connections split over `daemons`, all loaded at once. */
async function measure(label, daemons, loadOf) {
  const share = S.CONNECTIONS / daemons.length;
  const d0 = daemons.map((d) => h.cpuMs(d.pid)),
    p0 = pgCpu(),
    l0 = self(),
    m0 = machine(),
    t0 = performance.now();
  const stop = { done: false };
  const waits = sampleWaits(stop);
  const rs = await Promise.all(daemons.map((d) => h.load({ url: d.url, ...loadOf(d.key, share) })));
  stop.done = true;
  const dt = performance.now() - t0,
    m1 = machine();
  const req = rs.reduce((n, r) => n + r.requests, 0);
  const dcpu = daemons.reduce((n, d, i) => n + h.cpuMs(d.pid) - d0[i], 0),
    pcpu = pgCpu() - p0,
    lcpu = self() - l0;
  const us = (x) => +((x * 1000) / req).toFixed(0);
  const out = {
    label,
    rps: Math.round((req / dt) * 1000),
    p99: Math.max(...rs.map((r) => r.p99)).toFixed(1),
    errors: rs.reduce((n, r) => n + r.errors + r.non2xx, 0),
    cpuUsPerRequest: { daemons: us(dcpu), postgres: us(pcpu), load: us(lcpu), sum: us(dcpu + pcpu + lcpu) },
    machineIdle: +((m1.idle - m0.idle) / (m1.total - m0.total)).toFixed(2),
    coresUsedBySum: +((dcpu + pcpu + lcpu) / dt).toFixed(2),
    pgSessions: await waits,
  };
  console.log(JSON.stringify(out));
  return out;
}
const read = (key, n) => S.readLoad(key, ids, n),
  write = (key, n) => S.writeLoad(key, n);
await measure('warm-up', [a, b], read);
await measure('warm-up', [a, b], write);
for (let i = 0; i < rounds; i++) {
  await measure('read, one', [a], read);
  await measure('read, pair', [a, b], read);
  await measure('write, one', [a], write);
  await measure('write, pair', [a, b], write);
}
await mon.end();
await a.stop();
await b.stop();
await h.cleanupAll();
process.exit(0);
