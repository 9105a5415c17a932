// Issue 13 item 5: task_get over MCP Streamable HTTP against GET /api/v1/tasks/{id}, same daemon,
// same task, same concurrency. Target: MCP at least 0.5x the REST throughput.
// The daemon runs as its own process (`svc serve`), the load generator here (undici, keep-alive).
// Run: npm run build && node bench/mcp.mjs   (BENCH_REQUESTS, BENCH_CONCURRENCY, BENCH_ROUNDS)
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TASKS = Number(process.env.BENCH_TASKS ?? 1000);
const SVC = fileURLToPath(new URL('../bin/svc', import.meta.url));

async function load(url, { method = 'GET', path, headers = {}, body, check }) {
  const pool = new Pool(url, { connections: CONCURRENCY, pipelining: 1 });
  const lat = [];
  let next = 0;
  const worker = async () => {
    while (next < REQUESTS) {
      next++;
      const t = process.hrtime.bigint();
      const res = await pool.request({ method, path, headers, body });
      const text = await res.body.text();
      if (res.statusCode >= 400 || (check && !check(text))) throw new Error(`${method} ${path} answered ${res.statusCode}: ${text.slice(0, 200)}`);
      lat.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  await pool.close();
  lat.sort((a, b) => a - b);
  return { rps: (REQUESTS / ms) * 1000, p50: lat[Math.floor(lat.length * 0.5)], p99: lat[Math.floor(lat.length * 0.99)] };
}

const root = mkdtempSync(join(tmpdir(), 'svc-bench-mcp-'));
writeFileSync(join(root, 'project.json'), JSON.stringify({ name: 'bench-mcp' }));
const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean); // e.g. --cpu-prof for the daemon
const child = spawn(process.execPath, [...nodeArgs, SVC, 'serve', '--port', '0'], { cwd: root, env: { ...process.env, SVC_VAULT_KEY: 'ab'.repeat(32), SVC_KEYCHAIN: 'off', SERVICE_API_KEY: '' }, stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((resolve, reject) => {
  let out = '';
  const onData = (c) => {
    out += c;
    const m = /"msg":"listening","url":"([^"]+)"/.exec(out);
    if (m) {
      // Stop collecting: the daemon logs a line per request, and holding them would skew the run.
      child.stdout.off('data', onData);
      resolve(m[1]);
    }
  };
  child.stdout.on('data', onData);
  child.once('exit', (code) => reject(new Error(`svc serve exited ${code}: ${out}`)));
});
child.stdout.resume();
const key = readFileSync(join(root, '.svc', 'local.key'), 'utf8').trim();
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

try {
  let id;
  for (let i = 0; i < TASKS; i++) {
    const res = await fetch(`${url}/api/v1/tasks`, { method: 'POST', headers: auth, body: JSON.stringify({ title: `task ${i}`, description: 'seeded for the MCP bench' }) });
    if (i === TASKS >> 1) id = (await res.json()).data.id;
    else await res.arrayBuffer();
  }
  const rest = { path: `/api/v1/tasks/${id}`, headers: auth, check: (t) => t.includes(id) };
  const mcp = {
    method: 'POST',
    path: '/mcp',
    headers: { ...auth, accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'task_get', arguments: { taskId: id } } }),
    check: (t) => t.includes('"structuredContent"') && !t.includes('"isError":true'),
  };
  // Warm both paths (JIT, statement cache) before measuring.
  await load(url, { ...rest });
  await load(url, { ...mcp });
  const fmt = (r) => `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`;
  const ratios = [];
  console.log(`task_get over MCP vs GET /api/v1/tasks/{id}: ${REQUESTS} requests per run, concurrency ${CONCURRENCY}, ${ROUNDS} rounds, ${TASKS} tasks`);
  for (let r = 1; r <= ROUNDS; r++) {
    const a = await load(url, rest);
    const b = await load(url, mcp);
    ratios.push(b.rps / a.rps);
    console.log(`round ${r}\n  REST GET  ${fmt(a)}\n  MCP call  ${fmt(b)}\n  ratio     ${(b.rps / a.rps).toFixed(2)}x`);
  }
  ratios.sort((x, y) => x - y);
  const median = ratios[Math.floor(ratios.length / 2)];
  console.log(`median ratio ${median.toFixed(2)}x (target >= 0.5x): ${median >= 0.5 ? 'PASS' : 'FAIL'}`);
  process.exitCode = median >= 0.5 ? 0 : 1;
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(root, { recursive: true, force: true });
}
