import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The CLI tests run bin/svc, which loads dist/. Build it once, before any test file starts, so no
// test runs against a stale build and none rebuilds it while another is running the CLI.
export default function setup(): void {
  const repo = fileURLToPath(new URL('..', import.meta.url));
  execFileSync(process.execPath, [fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url)), '-p', 'tsconfig.json'], { cwd: repo, stdio: 'inherit' });
}
