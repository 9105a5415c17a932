// The single executable's entry (scripts/build-exe.mjs bundles it with everything it imports):
// the svc CLI, or, in a child process the daemon starts with SVC_EXE_ENTRY set, that child's
// entry. Threads do not come here: their code is an asset of the executable (lib/entry.ts).
import { EXE_ENTRY_ENV } from '../lib/exe.js';

async function start(entry: string | undefined): Promise<void> {
  if (entry === undefined) return (await import('../../bin/svc.js')).main();
  if (entry === 'data-worker') {
    await import('../resources/data/worker.js');
    return;
  }
  process.stderr.write(`svc: unknown ${EXE_ENTRY_ENV} "${entry}"\n`);
  process.exit(2);
}

const entry = process.env[EXE_ENTRY_ENV];
// Not inherited by what this process starts in turn.
delete process.env[EXE_ENTRY_ENV];
start(entry).catch((err: Error) => {
  process.stderr.write(`svc: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
