import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DAEMON_PARTS, startDaemon } from '../src/daemon.js';
import { createLogger } from '../src/kernel/log.js';
import { daemonEnv, makeProject } from './harness.js';

// startDaemon is the ordered list DAEMON_PARTS: each part started in turn, closed in reverse, and
// a part that fails to start closes those started before it (src/daemon.ts, kernel/parts.ts).

type Line = { msg: string; part?: string };

function capture() {
  const lines: Line[] = [];
  const log = createLogger((l) => lines.push(JSON.parse(l) as Line), 'debug');
  const said = (msg: string) => lines.filter((l) => l.msg === msg).map((l) => l.part!);
  return { lines, log, said };
}

describe('the daemon is an ordered list of named parts', () => {
  it('names them in the order they start', () => {
    expect(DAEMON_PARTS.map((p) => p.name)).toEqual([
      'config',
      'logging',
      'daemon info',
      'state',
      'events',
      'vault',
      'resources',
      'workers',
      'events fan-out',
      'pruner',
      'data provider',
      'board',
      'HTTP',
      'TLS reload',
      'config reload',
      'presence',
      'announce',
      'runner',
    ]);
  });

  it("starts every part in order and closes them in reverse, the resources' workers too", async () => {
    const root = makeProject();
    const { lines, log, said } = capture();
    const d = await startDaemon({ root, host: '127.0.0.1', port: 0, env: daemonEnv(root), log });
    // The config part starts before there is a log to say so.
    expect(said('part started')).toEqual(DAEMON_PARTS.map((p) => p.name).slice(1));
    // The resources' wiring and background parts, in the order of src/resources/index.ts.
    expect(said('wiring started')).toEqual(['agents', 'tasks', 'runs', 'missions', 'routines', 'skills', 'approvals', 'webhooks', 'providers']);
    expect(said('worker started')).toEqual(['lease reaper', 'routines', 'skills watcher', 'approval timeouts', 'permission sweeper', 'webhook deliveries', 'MCP']);
    await d.close();
    // Parts that hold nothing (the config, the board's services…) have nothing to close.
    const closing = said('part closing');
    expect(closing).toEqual(['runner', 'config reload', 'HTTP', 'data provider', 'pruner', 'workers', 'resources', 'state', 'daemon info', 'logging']);
    expect(said('worker closing')).toEqual(['MCP', 'permission sweeper', 'approval timeouts', 'skills watcher', 'lease reaper']);
    expect(said('wiring closing')).toEqual(['webhooks', 'routines']);
    // 'stopped' once the daemon info is withdrawn, before the log closes.
    const msgs = lines.map((l) => (l.part ? `${l.msg} ${l.part}` : l.msg));
    expect(msgs.indexOf('stopped')).toBeGreaterThan(msgs.indexOf('part closing daemon info'));
    expect(msgs.indexOf('stopped')).toBeLessThan(msgs.indexOf('part closing logging'));
    expect(msgs.indexOf('shutting down')).toBeLessThan(msgs.indexOf('part closing config reload'));
  });

  it('a part that fails to start closes the parts started before it, newest first', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const root = makeProject();
      const { log, said } = capture();
      await expect(startDaemon({ root, host: '127.0.0.1', port, env: daemonEnv(root), log })).rejects.toThrow(/in use/);
      const started = said('part started');
      expect(started).toEqual(
        DAEMON_PARTS.map((p) => p.name).slice(
          1,
          DAEMON_PARTS.findIndex((p) => p.name === 'HTTP'),
        ),
      );
      expect(said('part closing')).toEqual(['data provider', 'pruner', 'workers', 'resources', 'state', 'daemon info', 'logging']);
      expect(said('worker closing')).toEqual(['MCP', 'permission sweeper', 'approval timeouts', 'skills watcher', 'lease reaper']);
    } finally {
      blocker.close();
    }
  });
});
