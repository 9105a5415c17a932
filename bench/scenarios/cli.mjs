// `svc tasks ls --json` against a running daemon (100 tasks), wall time from spawn to exit, vs
// `node -e 0` (the floor: starting Node at all). Ten runs of each per round, alternating.
import { spawn } from 'node:child_process';

const RUNS = 10;

function wall(args, env) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
    let err = '';
    child.stderr.on('data', (c) => (err += c));
    child.once('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${args.join(' ')} exited ${code}: ${err}`))));
  });
}

export default {
  name: 'cli',
  order: 50,
  title: '`svc tasks ls --json` wall time vs `node -e 0`',
  async setup(h) {
    const { root } = await h.seededProject(100);
    const svc = await h.startSvc(root);
    const env = h.svcEnv(root);
    const times = async (args) => {
      const t = [];
      for (let i = 0; i < RUNS; i++) t.push(await wall(args, env));
      return { ms: h.median(t) };
    };
    return {
      svc: () => times([h.SVC_BIN, '--project', root, 'tasks', 'ls', '--json']),
      baseline: () => times(['-e', '0']),
      close: () => svc.stop(),
    };
  },
  targets: [{ metric: 'ms', label: 'wall time', unit: 'ms', of: 'ratio', op: '<=', value: 3 }],
};
