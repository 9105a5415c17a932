import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOLS } from '../src/tools/index.js';
import { SVC, svc } from './cli-helpers.js';
import { makeProject, startTestDaemon, type TestDaemon } from './harness.js';
import { collect } from './sse-collector.js';

// `svc mcp` as agent tools run it: a child process speaking MCP on stdio, forwarding to the daemon.

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
  expect((await d.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
});
afterAll(async () => {
  await d.close();
});

function stdioClient(root: string, env: Record<string, string> = {}): { client: Client; transport: StdioClientTransport; stderr: () => string } {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SVC, 'mcp', '--project', root],
    env: { ...(process.env as Record<string, string>), SERVICE_API_KEY: '', SVC_URL: '', SVC_PROJECT: '', NO_COLOR: '1', ...env },
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (c) => (err += c));
  return { client: new Client({ name: 'svc-stdio-test', version: '1.0.0' }), transport, stderr: () => err };
}

const call = async (client: Client, name: string, args: Record<string, unknown>): Promise<any> => {
  const r = await client.callTool({ name, arguments: args });
  expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
  return r.structuredContent;
};

describe('svc mcp (stdio, the SDK client spawning it)', () => {
  it('lists the tools and runs a task lifecycle against the daemon with the project key; events reach SSE', async () => {
    const sse = await collect(d.url, { key: d.key, filter: 'task:' });
    const { client, transport, stderr } = stdioClient(d.root);
    await client.connect(transport);
    expect(stderr()).toContain(`forwarding to ${d.url}/mcp`);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOLS.filter((t) => t.audience !== 'run').map((t) => t.name));

    const { task } = await call(client, 'task_create', { title: 'over stdio' });
    const next = await call(client, 'task_next', { agent: 'ana' });
    expect(next.task).toMatchObject({ id: task.id, status: 'in_progress', assignTo: 'ana' });
    await call(client, 'task_heartbeat', { taskId: task.id, leaseId: next.task.leaseId });
    await call(client, 'task_transition', { taskId: task.id, to: 'review', expectedFrom: 'in_progress', leaseId: next.task.leaseId });
    const done = await call(client, 'task_transition', { taskId: task.id, to: 'done', expectedFrom: 'review' });
    expect(done.task.status).toBe('done');

    // A refusal is a tool error, and the bridge stays up.
    const refused = await client.callTool({ name: 'task_transition', arguments: { taskId: task.id, to: 'pending' } });
    expect(refused.isError).toBe(true);
    expect((refused.content as { text: string }[])[0]!.text).toMatch(/^Error invalid_transition \(409\)/);
    expect((await call(client, 'task_get', { taskId: task.id })).task.status).toBe('done');

    await sse.until((c) => c.messages.filter((m) => m.event === 'task:transition').length >= 4);
    expect(sse.messages.map((m) => m.event)).toEqual(['task:created', 'task:transition', 'task:transition', 'task:claimed', 'task:transition', 'task:transition']);
    sse.close();
    await client.close();
  });

  it('exits 0 when the agent tool closes its stdin', async () => {
    const child = spawn(process.execPath, [SVC, 'mcp', '--project', d.root], { env: { ...process.env, SERVICE_API_KEY: '', SVC_URL: '', SVC_PROJECT: '' } });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
    child.stdin.write(JSON.stringify(init) + '\n');
    for (let i = 0; i < 200 && !out.includes('\n'); i++) await new Promise((r) => setTimeout(r, 25));
    expect(JSON.parse(out.split('\n')[0]!)).toMatchObject({ id: 1, result: { serverInfo: { name: 'svc' } } });
    child.stdin.end();
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).toBe(0);
  });

  it('answers every request written before stdin closed (`… | svc mcp`), then exits 0', async () => {
    const child = spawn(process.execPath, [SVC, 'mcp', '--project', d.root], { env: { ...process.env, SERVICE_API_KEY: '', SVC_URL: '', SVC_PROJECT: '' } });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    const lines = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'agent_list', arguments: {} } },
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'task_create', arguments: { title: 'piped in' } } },
    ];
    child.stdin.end(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).toBe(0);
    const answers = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: number; result?: unknown; error?: unknown });
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2, 3, 4]);
    expect(answers.filter((a) => a.error)).toEqual([]);
  });

  it('says on stderr, and exits 3, when no daemon runs for the project', async () => {
    const root = makeProject();
    const r = await svc(['mcp', '--project', root]);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/no svc daemon is running for the project in .*\n.*svc serve/);
  });

  it('answers a request with an error naming the problem when the daemon refuses the key', async () => {
    const { client, transport, stderr } = stdioClient(d.root, { SERVICE_API_KEY: 'not-the-key-0123456789' });
    await expect(client.connect(transport)).rejects.toThrow(/refused the API key \(401\)/);
    expect(stderr()).toMatch(/refused the API key/);
    await client.close();
  });
});

describe('svc mcp --print-config', () => {
  it.each([
    ['claude', (url: string) => ({ mcpServers: { svc: { type: 'http', url, headers: { Authorization: 'Bearer ${SERVICE_API_KEY}' } } } })],
    ['cursor', (url: string) => ({ mcpServers: { svc: { url, headers: { Authorization: 'Bearer ${env:SERVICE_API_KEY}' } } } })],
    ['gemini', (url: string) => ({ mcpServers: { svc: { httpUrl: url, headers: { Authorization: 'Bearer ${SERVICE_API_KEY}' } } } })],
  ])('%s: JSON with the running daemon URL and the key from an environment variable', async (client, expected) => {
    const r = await svc(['mcp', '--project', d.root, '--print-config', client]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(expected(`${d.url}/mcp`));
    expect(r.stderr).toContain('export SERVICE_API_KEY=');
    expect(r.stdout + r.stderr).not.toContain(d.key);
  });

  it('codex: TOML with bearer_token_env_var', async () => {
    const r = await svc(['mcp', '--project', d.root, '--print-config', 'codex']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`[mcp_servers.svc]\nurl = "${d.url}/mcp"\nbearer_token_env_var = "SERVICE_API_KEY"\n`);
  });

  it('without a running daemon, uses the host and port of project.json; an unknown client is a usage error', async () => {
    const root = makeProject({ server: { port: 7555 } });
    const r = await svc(['mcp', '--project', root, '--print-config', 'claude']);
    expect(JSON.parse(r.stdout).mcpServers.svc.url).toBe('http://127.0.0.1:7555/mcp');
    expect((await svc(['mcp', '--project', root, '--print-config', 'vim'])).code).toBe(2);
  });
});
