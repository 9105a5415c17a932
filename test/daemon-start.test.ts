import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startDaemon } from '../src/daemon.js';
import { createLogger } from '../src/kernel/log.js';
import { makeProject } from './harness.js';

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('startDaemon failures', () => {
  it('a port in use rejects with a hint and leaves no timer or watcher behind', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    const before = timers();
    const logs: string[] = [];
    await expect(startDaemon({ root: makeProject(), host: '127.0.0.1', port, env: {}, log: createLogger((l) => logs.push(l)) })).rejects.toThrow(/in use.*--port 0/);
    await new Promise((r) => setTimeout(r, 50));
    expect(timers()).toBeLessThanOrEqual(before);
    blocker.close();
  });

  it('refuses a SERVICE_API_KEY shorter than 16 characters', async () => {
    await expect(startDaemon({ root: makeProject(), host: '127.0.0.1', port: 0, env: { SERVICE_API_KEY: 'short' }, log: createLogger(() => {}) })).rejects.toThrow(/SERVICE_API_KEY must be at least 16 characters/);
  });

  it('refuses to open the event stream once shutting down', async () => {
    const { SseHub } = await import('../src/events/sse.js');
    const { EventLog } = await import('../src/events/outbox.js');
    const { openDatabase } = await import('../src/db/open.js');
    const { STATE_MIGRATIONS } = await import('../src/db/migrations.js');
    const hub = new SseHub(new EventLog(openDatabase(':memory:', STATE_MIGRATIONS)));
    hub.closeAll();
    expect(() => hub.open({} as never, { keyId: 'k', matches: () => true })).toThrow(/shutting down/);
  });
});
