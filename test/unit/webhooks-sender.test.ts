import { readdirSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/kernel/log.js';
import { Sender } from '../../src/resources/webhooks/sender.js';
import { eventually } from '../harness.js';

// The delivery thread is started by the first delivery and stopped with the daemon: a project
// without webhooks never pays for a second V8 heap. A worker thread terminated
// while it still imports its modules leaves the files it was reading open in this process; a daemon
// started and stopped quickly (tests, `svc serve` that fails at once) must leave nothing behind.

/** Descriptors of this process open on JavaScript files (module sources being read). */
const openSources = (): string[] =>
  readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return /\.m?js$/.test(target) ? [target] : [];
    } catch {
      return [];
    }
  });

/** A delivery the thread answers at once, without the network: a literal address it refuses. */
const refused = { url: 'http://0.0.0.0:9/hook', body: '{}', headers: {}, timeoutMs: 1000 };
const threadOf = (s: Sender) => (s as unknown as { thread: unknown }).thread;

describe('webhook delivery thread', () => {
  it('starts with the first delivery, not before, and is stopped by close', async () => {
    const s = new Sender(
      {},
      createLogger(() => undefined),
    );
    expect(threadOf(s)).toBeNull();
    const { sent } = await s.send(refused);
    expect(sent.result).toMatchObject({ refused: true });
    expect(threadOf(s)).not.toBeNull();
    await s.close();
    expect((await s.send(refused)).sent.result).toEqual({ error: 'cut short by shutdown' });
  });
});

describe.runIf(process.platform === 'linux')('webhook delivery thread', () => {
  it('stopped while it still loads its modules, it leaves no file open', async () => {
    const log = createLogger(() => undefined);
    const before = openSources();
    // Stopped at moments spread over the thread's start-up, so some land in the middle of an import.
    for (let delayMs = 0; delayMs <= 100; delayMs += 5) {
      const s = new Sender({}, log);
      void s.send(refused);
      await new Promise((r) => setTimeout(r, delayMs));
      await s.close();
    }
    // A file the thread left open never closes: wait until the list is back to what it was, and
    // fail with the difference when it does not come back.
    await eventually(() => JSON.stringify(openSources()) === JSON.stringify(before)).catch(() => undefined);
    expect(openSources()).toEqual(before);
  });
});
