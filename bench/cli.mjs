// The CLI's start-up (issue 10, point 1): client commands beside `node -e 0`, and `svc serve`
// from spawn to healthz answering in an empty project. Run after `npm run build`:
//   node bench/cli.mjs            (BENCH_CLI_ROUNDS=N for more rounds; default 15)
// Wall times vary with the machine and its load; the ratio to `node -e 0` is what to watch
// (target: at most 3x for client commands; serve ready under 500 ms). Nothing here is asserted by
// the tests.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SVC = fileURLToPath(new URL('../bin/svc', import.meta.url));
const ROUNDS = Number(process.env.BENCH_CLI_ROUNDS ?? 15);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function project() {
  const root = mkdtempSync(join(tmpdir(), 'svc-bench-cli-'));
  writeFileSync(join(root, 'project.json'), JSON.stringify({ name: 'bench' }));
  return root;
}
const env = (root) => ({ ...process.env, SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: join(root, '.user-config'), NO_COLOR: '1' });

function timeRun(args, root) {
  const t = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: root, env: env(root), stdio: 'ignore' });
  if (r.status !== 0 && args[0] !== '-e') throw new Error(`svc ${args.slice(1).join(' ')} exited ${r.status}`);
  return performance.now() - t;
}

async function serveReady(root) {
  const t = performance.now();
  const child = spawn(process.execPath, [SVC, 'serve', '--port', '0'], { cwd: root, env: env(root), stdio: 'ignore' });
  for (;;) {
    try {
      const { url } = JSON.parse(readFileSync(join(root, '.svc', 'daemon.json'), 'utf8'));
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  const ms = performance.now() - t;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return ms;
}

const root = project();
try {
  // A daemon for the client commands to talk to.
  const daemon = spawn(process.execPath, [SVC, 'serve', '--port', '0'], { cwd: root, env: env(root), stdio: 'ignore' });
  for (;;) {
    try {
      readFileSync(join(root, '.svc', 'daemon.json'));
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const commands = [['--version'], ['tasks', 'ls'], ['approvals', 'ls'], ['agents', 'ls'], ['status']];
  const base = median(Array.from({ length: ROUNDS }, () => timeRun(['-e', '0'], root)));
  console.log(`CLI start-up, median of ${ROUNDS} (load average ${process.platform === 'linux' ? readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') : 'n/a'})`);
  console.log(`  node -e 0            ${base.toFixed(0).padStart(5)} ms`);
  for (const c of commands) {
    const ms = median(Array.from({ length: ROUNDS }, () => timeRun([SVC, ...c], root)));
    console.log(`  svc ${c.join(' ').padEnd(17)}${ms.toFixed(0).padStart(5)} ms  ${(ms / base).toFixed(1)}x`);
  }
  daemon.kill('SIGTERM');
  await new Promise((r) => daemon.once('exit', r));

  const ready = [];
  for (let i = 0; i < Math.min(ROUNDS, 7); i++) {
    const fresh = project();
    ready.push(await serveReady(fresh));
    rmSync(fresh, { recursive: true, force: true });
  }
  console.log(`  svc serve ready      ${median(ready).toFixed(0).padStart(5)} ms  (spawn to healthz, empty project; target < 500 ms)`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
