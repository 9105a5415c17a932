// The single executable (scripts/build-exe.mjs, built here into a temp folder with this node)
// against `node bin/svc` from this checkout: `svc --version` wall time (ten runs a round, their
// median), and `svc serve` → healthz with 1,000 tasks. Its size, raw and gzipped, is reported
// from the build.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const RUNS = 10;

function wall(program, args, env) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(program, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
    let err = '';
    child.stderr.on('data', (c) => (err += c));
    child.once('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${program} ${args.join(' ')} exited ${code}: ${err}`))));
  });
}

export default {
  name: 'exe',
  order: 65,
  title: 'the single executable vs node bin/svc: `svc --version`, `svc serve` → healthz (1,000 tasks), size',
  async setup(h) {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-exe-'));
    h.onCleanup(() => rmSync(dir, { recursive: true, force: true }));
    const exe = join(dir, 'svc');
    const built = spawnSync(process.execPath, [join(h.REPO, 'scripts', 'build-exe.mjs'), '--out', exe], { encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`build:exe failed: ${built.stderr}`);
    const report = JSON.parse(readFileSync(join(dir, 'build-report.json'), 'utf8'));
    const { root } = await h.seededProject(1_000);
    const env = h.svcEnv(root);
    const measure = async (command) => {
      const t = [];
      for (let i = 0; i < RUNS; i++) t.push(await wall(command[0], [...command.slice(1), '--version'], env));
      const svc = await h.startSvc(root, { command });
      const readyMs = svc.readyMs;
      await svc.stop();
      return { versionMs: h.median(t), readyMs };
    };
    return {
      svc: async () => ({ ...(await measure([exe])), sizeMB: report.bytes / 1e6, gzipMB: report.gzipBytes / 1e6 }),
      baseline: () => measure([process.execPath, h.SVC_BIN]),
    };
  },
  targets: [
    { metric: 'versionMs', label: '`svc --version`', unit: 'ms', of: 'ratio', op: '<=', value: 1.5 },
    { metric: 'readyMs', label: 'serve → healthz', unit: 'ms', of: 'ratio', op: '<=', value: 1.5 },
    { metric: 'sizeMB', label: 'size', unit: 'MB', op: '<=', value: 140 },
    { metric: 'gzipMB', label: 'size gzipped', unit: 'MB' },
  ],
};
