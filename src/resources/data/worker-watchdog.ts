import { Worker } from 'node:worker_threads';

// A data worker's main thread may be inside one SQLite statement for as long as the statement
// runs, and nothing in JavaScript runs there meanwhile: not the IPC 'disconnect' handler, not a
// timer. So the parent is watched from a thread of its own: when the daemon is gone (by kill -9
// too) the process is reparented, and the thread kills it, whatever the main thread is doing,
// within POLL_MS. Its locks go with it.

const POLL_MS = 200;

const WATCH = `
const { workerData } = require('node:worker_threads');
setInterval(() => {
  if (process.ppid !== workerData.ppid) process.kill(process.pid, 'SIGKILL');
}, workerData.pollMs);
`;

/** Starts the thread that kills this process once its parent (`ppid`, the daemon) is gone. */
export function watchParent(ppid: number = process.ppid, pollMs: number = POLL_MS): Worker {
  const w = new Worker(WATCH, {
    eval: true,
    workerData: { ppid, pollMs },
    // A timer and one comparison: the smallest heap that starts (about 10 MB of the process's memory).
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
    stdout: false,
    stderr: false,
    env: {},
  });
  // The thread never keeps the process alive by itself.
  w.unref();
  return w;
}
