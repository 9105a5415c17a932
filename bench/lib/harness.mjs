// What scenarios use: temp projects, the real daemon as a `svc serve` child process, baselines
// and load generators as their own child processes, and process RSS. Nothing here runs load in
// the bench's own process, so the daemon, its baseline and the load never share an event loop.
import Database from '../../dist/src/db/sqlite.js';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const SVC_BIN = join(REPO, 'bin', 'svc');
const LOAD = fileURLToPath(new URL('./load.mjs', import.meta.url));

const cleanups = [];
/** Runs at exit (and on Ctrl-C): children are killed and temp projects removed. */
export function onCleanup(fn) {
  cleanups.push(fn);
}
export async function cleanupAll() {
  for (const fn of cleanups.splice(0).reverse()) {
    try {
      await fn();
    } catch {
      // best effort
    }
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The value after `--name` on the command line of a standalone bench script, or `dflt`. */
export function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
}

/** An empty svc project in a temp directory; removed at exit. */
export function makeProject(config = {}) {
  const root = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  writeFileSync(join(root, 'project.json'), JSON.stringify({ name: 'bench', ...config }, null, 2));
  onCleanup(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

/** The daemon's environment: no OS keychain, no files in the real home. */
export function svcEnv(root, extra = {}) {
  return { ...process.env, SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: join(root, '.user-config'), NO_COLOR: '1', ...extra };
}

/** Resident set size of a process in MiB (Linux /proc). */
export function rssMiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** The fields of /proc/<pid>/stat after the command name (Linux). */
function statFields(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU time (user + system) a process has used, in ms (Linux /proc, 10 ms ticks). */
export function cpuMs(pid) {
  const f = statFields(pid);
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
}

/** CPU time (user + system) of the children a process has waited for, in ms (for a daemon: the git and agent processes it ran). */
export function reapedCpuMs(pid) {
  const f = statFields(pid);
  return ((Number(f[13]) + Number(f[14])) * 1000) / 100;
}

/**
 * Runs HTTP load against a server process and adds what it cost that process: CPU µs per answered
 * request (steadier than throughput on a shared machine, since other processes' load does not
 * change it much) and its RSS at the end.
 */
export async function loadServer(server, opts) {
  const before = cpuMs(server.pid);
  const r = await load({ url: server.url, ...opts });
  return { ...r, cpuUs: ((cpuMs(server.pid) - before) * 1000) / Math.max(1, r.requests), rss: rssMiB(server.pid) };
}

function waitExit(child) {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', r));
}

/**
 * Starts `node bin/svc serve --port 0` in `root` and resolves once /healthz answers. The port is
 * read from .svc/daemon.json, as the CLI does. `readyMs` is spawn → first healthz 200.
 */
export async function startSvc(root, { nodeArgs = [], env = {}, timeoutMs = 30_000, command } = {}) {
  const info = join(root, '.svc', 'daemon.json');
  rmSync(info, { force: true });
  // BENCH_CPU_PROF=<dir>: every daemon (and each data worker it forks) writes a V8 CPU profile
  // there when it stops (bench/lib/flame.mjs reads it).
  if (process.env.BENCH_CPU_PROF) nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, ...nodeArgs];
  const t0 = performance.now();
  // `command`: how svc is started instead of node bin/svc (the single executable: [path]).
  const [program, ...prefix] = command ?? [process.execPath, ...nodeArgs, SVC_BIN];
  const child = spawn(program, [...prefix, 'serve', '--port', '0', '--project', root], {
    cwd: root,
    env: svcEnv(root, env),
    // stdout is a pipe the bench drains, as a terminal or a supervisor would take it.
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.resume();
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const kill = () => child.kill('SIGKILL');
  onCleanup(kill);
  let url;
  while (!url) {
    if (child.exitCode !== null) throw new Error(`svc serve exited ${child.exitCode}: ${stderr}`);
    if (performance.now() - t0 > timeoutMs) throw new Error(`svc serve not ready after ${timeoutMs} ms: ${stderr}`);
    if (existsSync(info)) {
      try {
        const d = JSON.parse(readFileSync(info, 'utf8'));
        if (d.pid === child.pid) url = d.url;
      } catch {
        // half-written
      }
    }
    if (!url) await sleep(2);
  }
  for (;;) {
    try {
      const res = await fetch(`${url}/healthz`);
      await res.arrayBuffer();
      if (res.ok) break;
    } catch {
      // not yet
    }
    await sleep(2);
  }
  const readyMs = performance.now() - t0;
  const key = readFileSync(join(root, '.svc', 'local.key'), 'utf8').trim();
  return {
    root,
    url,
    key,
    pid: child.pid,
    readyMs,
    child,
    rss: () => rssMiB(child.pid),
    /** SIGTERM and wait: a clean shutdown flushes the request log. */
    async stop() {
      child.kill('SIGTERM');
      await waitExit(child);
    },
  };
}

/**
 * Starts a baseline server (a file under bench/baselines/) as its own process; it prints
 * `{"port":N}` on its first stdout line once listening.
 */
export async function startBaseline(file, args = {}) {
  const child = spawn(process.execPath, [fileURLToPath(new URL(`../baselines/${file}`, import.meta.url)), JSON.stringify(args)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  onCleanup(() => child.kill('SIGKILL'));
  const port = await new Promise((resolve, reject) => {
    let buf = '';
    child.stdout.on('data', (c) => {
      buf += c;
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(buf.slice(0, nl)).port);
    });
    child.once('exit', (code) => reject(new Error(`baseline ${file} exited ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    rss: () => rssMiB(child.pid),
    async stop() {
      child.kill('SIGTERM');
      await waitExit(child);
    },
  };
}

/** Runs a node script as a child process; resolves with its stdout parsed as JSON. */
export function runJsonChild(file, args, { env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'inherit'], env: env ?? process.env });
    onCleanup(() => child.kill('SIGKILL'));
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`${file} exited ${code}`));
      try {
        resolve(JSON.parse(out));
      } catch (_err) {
        reject(new Error(`${file} printed no JSON: ${out.slice(0, 200)}`));
      }
    });
  });
}

/**
 * HTTP load from a separate process (autocannon). opts: url, path or paths (round-robin),
 * method, headers, body or bodies, connections, seconds. Resolves with
 * { rps, p50, p99, requests, errors, non2xx } (latencies in ms from hrtime, not rounded).
 */
export function load(opts) {
  return runJsonChild(LOAD, opts);
}

/**
 * Seeds a project's state database directly (the daemon must not be running): `tasks` task rows
 * with a task:created event each, statuses cycling through pending/assigned/in_progress/done.
 * The first start of the daemon creates the schema, so call this after startSvc + stop.
 */
export function seedTasks(root, count) {
  const db = new Database(join(root, '.svc', 'state.sqlite'));
  db.pragma('journal_mode = WAL');
  const states = ['pending', 'assigned', 'in_progress', 'done'];
  const insert = db.prepare("INSERT INTO tasks (id, title, description, status, priority, labels, created_at, updated_at) VALUES (?, ?, 'seeded by bench', ?, 'normal', '[\"bench\"]', ?, ?)");
  const event = db.prepare("INSERT INTO events (name, data, created_at) VALUES ('task:created', ?, ?)");
  const ids = [];
  const base = Date.now() - count;
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const t = base + i;
      const id = uuidv7At(t, i);
      const at = new Date(t).toISOString();
      insert.run(id, `task ${i}`, states[i % states.length], at, at);
      event.run(JSON.stringify({ taskId: id, title: `task ${i}`, status: states[i % states.length] }), at);
      ids.push(id);
    }
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return ids;
}

/** A uuidv7 for time `ms`, unique by `seq` (seeded ids must sort in creation order, as the daemon's do). */
function uuidv7At(ms, seq) {
  const hex = ms.toString(16).padStart(12, '0') + '7' + (seq & 0xfff).toString(16).padStart(3, '0');
  const rand = [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, '0')).join('');
  const v = ((parseInt(rand.slice(0, 2), 16) & 0x3f) | 0x80).toString(16) + rand.slice(2);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${v.slice(0, 4)}-${v.slice(4, 16)}`;
}

/** A project with `tasks` seeded tasks and its schema made by a real first start. */
export async function seededProject(tasks, config) {
  const root = makeProject(config);
  const first = await startSvc(root);
  await first.stop();
  const ids = tasks ? seedTasks(root, tasks) : [];
  return { root, ids };
}

/**
 * The task scenarios' pair: a seeded project served by svc, and the plain tasks baseline on a copy
 * of the same database, both driven by `load(key)` (loadServer options, the same for both sides).
 */
export async function taskServerPair(tasks, load) {
  const { root, ids } = await seededProject(tasks);
  const copy = copyStateDb(root);
  const svc = await startSvc(root);
  const base = await startBaseline('tasks-server.mjs', { db: copy, key: svc.key });
  const opts = load({ key: svc.key, ids });
  return {
    svc: () => loadServer(svc, opts),
    baseline: () => loadServer(base, opts),
    close: async () => {
      await svc.stop();
      await base.stop();
    },
  };
}

/** A copy of a project's state database for a baseline (so the two never share a WAL). */
export function copyStateDb(root) {
  const file = join(root, '.svc', 'baseline.sqlite');
  const db = new Database(join(root, '.svc', 'state.sqlite'), { readonly: true });
  db.exec(`VACUUM INTO '${file.replaceAll("'", "''")}'`);
  db.close();
  return file;
}

export function median(values) {
  const v = values.filter((x) => typeof x === 'number' && !Number.isNaN(x)).sort((a, b) => a - b);
  if (!v.length) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}
