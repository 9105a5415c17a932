// The svc CLI's entry. `run` is the whole CLI as a function (argv, streams, environment → exit
// code), which tests call in-process; `main` runs it as the process, for bin/svc.
import { run } from '../src/cli/run.js';

export { run, type RunOptions } from '../src/cli/run.js';

export async function main(): Promise<void> {
  // `svc openapi | head`: the reader leaving early is not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
  const code = await run(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, cwd: process.cwd(), process: true });
  // Exit now rather than when the last handle closes (a finished `svc serve` may leave a keychain
  // thread or an idle socket behind), once what was written has reached the pipes.
  await new Promise<void>((r) => process.stdout.write('', () => r()));
  await new Promise<void>((r) => process.stderr.write('', () => r()));
  process.exit(code);
}
