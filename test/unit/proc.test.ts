import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pidAlive, statFields } from '../../src/lib/proc.js';

const state = (pid: number): string | undefined => {
  try {
    return statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[0];
  } catch {
    return undefined;
  }
};

describe('pidAlive', () => {
  it('is true for a running process and false for a pid nobody has', () => {
    expect(pidAlive(process.pid)).toBe(true);
    expect(pidAlive(2 ** 22 + 1)).toBe(false); // above Linux's pid_max
  });

  // `svc stop` waits until the daemon's pid is not alive. A detached daemon's parent is init (or a
  // container's first process), which may collect an exited child seconds later: until then it
  // is a zombie, and counting it as alive made every stop and restart wait for nothing.
  it.skipIf(process.platform !== 'linux')('is false for a zombie: a process that exited but was not collected', async () => {
    // The shell starts a short sleep in the background, prints its pid, then becomes a long
    // `sleep`, which never collects its child: once the short one ends it stays a zombie.
    const parent = spawn('/bin/sh', ['-c', 'sleep 0.2 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(d.toString()))));
      const deadline = Date.now() + 5000;
      while (state(pid) !== 'Z' && Date.now() < deadline) await new Promise((r) => setImmediate(r));
      expect(state(pid)).toBe('Z');
      expect(() => process.kill(pid, 0)).not.toThrow(); // what the check used to look at alone
      expect(pidAlive(pid)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
