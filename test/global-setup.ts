import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The CLI tests run bin/svc, which loads dist/. Build it once, before any test file starts, so no
// test runs against a stale build and none rebuilds it while another is running the CLI. The build
// is incremental (its state in dist/.tsbuildinfo, gone with dist/): a run after a small change
// recompiles what changed in about a second instead of everything in seven.
export default function setup(): void {
  const repo = fileURLToPath(new URL('..', import.meta.url));
  const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json', '--incremental', '--tsBuildInfoFile', 'dist/.tsbuildinfo'], { cwd: repo, stdio: 'inherit' });
}
