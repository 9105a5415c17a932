import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { MCP_DOOR } from '../src/tools/door.js';
import { gitProject, startTestDaemon, until, type TestDaemon } from './harness.js';

// Every run's CLI calls /mcp in its first seconds; the MCP SDK's evaluation holds the daemon's
// requests (131 ms measured among 8 starting Claude Code runs). A daemon that runs agents loads
// it ahead of them (src/tools/warm.ts); one that does not never loads it until a client calls.

const FAKE_AGENT = fileURLToPath(new URL('./fixtures/runs/fake-agent.mjs', import.meta.url));
const daemons: TestDaemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.close();
});

async function start(config: Record<string, unknown> = {}, root = gitProject(config), keepRoot = false): Promise<TestDaemon> {
  const d = await startTestDaemon({ root, keepRoot, env: { PATH: process.env.PATH! } });
  daemons.push(d);
  return d;
}
const server = (d: TestDaemon) => d.daemon.app.services.get(MCP_DOOR).server;
const agent = (name: string, runtime?: object) => ({ body: { name, ...(runtime ? { runtime } : {}) } });

describe('the MCP server, loaded ahead of the agents that will call it', () => {
  it('is made when an agent is given a runtime, with no call to /mcp; not for an agent without one', async () => {
    const d = await start();
    expect((await d.api('POST', '/api/v1/agents', agent('plain'))).status).toBe(201);
    // The next agent's event comes after the first's: once it has been acted on, the first has too.
    expect((await d.api('POST', '/api/v1/agents', agent('later'))).status).toBe(201);
    expect(server(d)).toBeNull();
    expect((await d.api('PATCH', '/api/v1/agents/later', { body: { runtime: { kind: 'command', command: FAKE_AGENT, autoRun: false } } })).status).toBe(200);
    await until('the MCP server is made', async () => server(d) !== null);
    // And it serves the first call as before.
    const res = await d.api('POST', '/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } });
    expect(res.status).toBe(200);
  });

  it('is made a moment after start when the project already has such an agent', async () => {
    const first = await start({}, undefined, true);
    expect((await first.api('POST', '/api/v1/agents', agent('worker', { kind: 'command', command: FAKE_AGENT, autoRun: false }))).status).toBe(201);
    const root = first.root;
    await first.close();
    daemons.splice(daemons.indexOf(first), 1);
    const again = await start({}, root);
    expect(server(again)).toBeNull();
    await until('the MCP server is made after start', async () => server(again) !== null, 5_000);
  });

  it('is not made by a daemon that runs no agents (runner.enabled false)', async () => {
    const d = await start({ runner: { enabled: false } });
    expect((await d.api('POST', '/api/v1/agents', agent('worker', { kind: 'command', command: FAKE_AGENT, autoRun: false }))).status).toBe(201);
    // A daemon with a runtime agent is loaded within a second of its event; give this one as long.
    const other = await start();
    expect((await other.api('POST', '/api/v1/agents', agent('worker', { kind: 'command', command: FAKE_AGENT, autoRun: false }))).status).toBe(201);
    await until('the other daemon made its server', async () => server(other) !== null);
    expect(server(d)).toBeNull();
  });
});
