import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOLS } from '../src/tools/index.js';
import { handleMcp, MCP_DOOR } from '../src/tools/mcp.js';
import { rawRequest, startTestDaemon, type TestDaemon } from './harness.js';
import { collect, type Collector } from './sse-collector.js';

const READ_KEY = 'reader-key-0123456789abcdef';
const READ_TOOLS = TOOLS.filter((t) => t.annotations.readOnlyHint).map((t) => t.name);

let d: TestDaemon;

async function connect(key: string | null = d.key): Promise<Client> {
  const client = new Client({ name: 'svc-test', version: '1.0.0' });
  const headers: Record<string, string> = key === null ? {} : { Authorization: `Bearer ${key}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`), { requestInit: { headers } }));
  return client;
}

/** Calls a tool and returns its structuredContent, failing the test on a tool error. */
async function call(client: Client, name: string, args: Record<string, unknown>): Promise<any> {
  const r = await client.callTool({ name, arguments: args });
  expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
  return r.structuredContent;
}

const text = (r: any): string => r.content.map((c: { text: string }) => c.text).join('\n');

beforeAll(async () => {
  d = await startTestDaemon({ config: { apiKeys: [{ name: 'reader', key: READ_KEY, tools: 'read' }] } });
  for (const name of ['ana', 'bob']) expect((await d.api('POST', '/api/v1/agents', { body: { name } })).status).toBe(201);
});
afterAll(async () => {
  await d.close();
});

describe('MCP over Streamable HTTP (the SDK client)', () => {
  it('lists every tool of the registry with schemas and annotations', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    // Every tool but those for runs' CLIs (permission_prompt), which run keys alone see.
    expect(tools.map((t) => t.name)).toEqual(TOOLS.filter((t) => t.audience !== 'run').map((t) => t.name));
    for (const t of tools) {
      expect(t.name).toMatch(/^[a-z][a-z0-9_]{0,58}$/);
      expect(t.description!.length).toBeGreaterThan(20);
      expect(t.inputSchema.type).toBe('object');
      expect(t.outputSchema?.type).toBe('object');
      expect(typeof t.annotations?.readOnlyHint).toBe('boolean');
      expect(typeof t.annotations?.destructiveHint).toBe('boolean');
      expect(typeof t.annotations?.idempotentHint).toBe('boolean');
    }
    expect(client.getServerVersion()?.name).toBe('svc');
    await client.close();
  });

  it('runs a whole task lifecycle through task_next, task_heartbeat and task_transition, with the events on the SSE stream', async () => {
    const sse: Collector = await collect(d.url, { key: d.key, filter: 'task:' });
    const client = await connect();
    const created = await call(client, 'task_create', { title: 'ship the MCP door', priority: 'high' });
    const id = created.task.id;
    expect(created.task.status).toBe('pending');

    const next = await call(client, 'task_next', { agent: 'ana' });
    expect(next.task).toMatchObject({ id, status: 'in_progress', assignTo: 'ana' });
    expect(next.task.leaseId).toEqual(expect.any(String));
    expect(Date.parse(next.task.leaseExpiresAt) - Date.now()).toBeGreaterThan(890_000);

    const beat = await call(client, 'task_heartbeat', { taskId: id, leaseId: next.task.leaseId });
    expect(beat).toMatchObject({ taskId: id, agent: 'ana', leaseId: next.task.leaseId });

    await call(client, 'task_comment', { taskId: id, body: 'half way', author: 'ana' });
    const review = await call(client, 'task_transition', { taskId: id, to: 'review', expectedFrom: 'in_progress', leaseId: next.task.leaseId, result: { pr: 42 } });
    expect(review.task).toMatchObject({ status: 'review', result: { pr: 42 }, leaseExpiresAt: null });
    const done = await call(client, 'task_transition', { taskId: id, to: 'done', expectedFrom: 'review' });
    expect(done.task.status).toBe('done');

    const got = await call(client, 'task_get', { taskId: id, withNotes: true });
    expect(got.task.status).toBe('done');
    expect(got.comments).toEqual([expect.objectContaining({ body: 'half way', author: 'ana' })]);
    expect(await call(client, 'task_get', { taskId: id })).toEqual({ task: got.task });

    const expected = ['task:created', 'task:transition', 'task:transition', 'task:claimed', 'task:commented', 'task:transition', 'task:transition'];
    await sse.until((c) => c.messages.length >= expected.length);
    expect(sse.messages.map((m) => m.event)).toEqual(expected);
    const moves = sse.messages.filter((m) => m.event === 'task:transition').map((m) => JSON.parse(m.data));
    expect(moves.map((m) => `${m.from}>${m.to}`)).toEqual(['pending>assigned', 'assigned>in_progress', 'in_progress>review', 'review>done']);
    expect(JSON.parse(sse.messages[3]!.data)).toEqual({ taskId: id, agent: 'ana' });
    sse.close();
    await client.close();
  });

  it('answers a refused call as a tool error with our code, and the session goes on', async () => {
    const client = await connect();
    const { task } = await call(client, 'task_create', { title: 'refusals' });
    const before = await d.daemon.app.events.lastId();

    const illegal = await client.callTool({ name: 'task_transition', arguments: { taskId: task.id, to: 'done' } });
    expect(illegal.isError).toBe(true);
    expect(illegal.structuredContent).toBeUndefined();
    expect(text(illegal)).toMatch(/^Error invalid_transition \(409\): .*pending to done/);
    expect(illegal._meta).toMatchObject({ 'svc/error': { code: 'invalid_transition', status: 409 } });

    const stale = await client.callTool({ name: 'task_transition', arguments: { taskId: task.id, to: 'assigned', expectedFrom: 'review' } });
    expect(text(stale)).toMatch(/^Error conflict \(409\)/);

    const missing = await client.callTool({ name: 'task_get', arguments: { taskId: 'nope' } });
    expect(text(missing)).toMatch(/^Error not_found \(404\)/);

    const bad = await client.callTool({ name: 'task_create', arguments: { title: '', colour: 'red' } });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/^Error invalid_request \(400\)/);
    expect(text(bad)).toContain('input.title');
    expect(text(bad)).toContain('input.colour');

    // Worded by REST's own function: the same message and details as POST /api/v1/tasks gives the
    // same body, with `input` for `body` (each unknown key named on its own).
    const wrong = { title: '', colour: 'red', size: 3, priority: 'asap' };
    const rest = await d.api('POST', '/api/v1/tasks', { body: wrong });
    expect(rest.status).toBe(400);
    const byTool = await client.callTool({ name: 'task_create', arguments: wrong });
    const asTool = (v: string) => v.replace(/\bbody\./g, 'input.');
    const said = (byTool._meta as { 'svc/error': { message: string; details: { path: string; message: string }[] } })['svc/error'];
    expect(said.message).toBe(asTool(rest.body.error));
    expect(said.details).toEqual(rest.body.details.map((x: { path: string; message: string }) => ({ path: asTool(x.path), message: x.message })));
    expect(said.details.map((x) => x.path)).toEqual(expect.arrayContaining(['input.colour', 'input.size', 'input.title', 'input.priority']));

    const wrongLease = await client.callTool({ name: 'task_heartbeat', arguments: { taskId: task.id, leaseId: 'not-a-lease' } });
    expect(text(wrongLease)).toMatch(/^Error conflict \(409\)/);

    // One prefix, the client's own: the daemon's message does not carry the SDK's "MCP error -32602: " too.
    const unknown = await client.callTool({ name: 'task_delete_everything', arguments: {} }).then(
      () => '',
      (e: Error) => e.message,
    );
    expect(unknown).toMatch(/^MCP error -32602: Unknown tool: task_delete_everything\. /);
    expect(unknown.match(/MCP error/g)).toHaveLength(1);
    expect(await d.daemon.app.events.since(before, 100)).toEqual([]);

    // Still usable after all that.
    expect((await call(client, 'task_get', { taskId: task.id })).task.status).toBe('pending');
    await client.close();
  });

  it('emits the same events as the HTTP call would', async () => {
    const client = await connect();
    const viaHttp = (await d.api('POST', '/api/v1/tasks', { body: { title: 'twin', assignTo: 'bob' } })).body.data;
    const mark = await d.daemon.app.events.lastId();
    const viaMcp = (await call(client, 'task_create', { title: 'twin', assignTo: 'bob' })).task;
    const [httpEvents, mcpEvents] = [(await d.daemon.app.events.since(mark - 1, 10)).slice(0, 1), await d.daemon.app.events.since(mark, 10)];
    expect(mcpEvents.map((e) => ({ ...e.data, taskId: 'x' }))).toEqual(httpEvents.map((e) => ({ ...e.data, taskId: 'x' })));
    expect(mcpEvents.map((e) => e.name)).toEqual(['task:created']);
    expect(viaMcp.assignTo).toBe(viaHttp.assignTo);
    await client.close();
  });

  it('serves missions, approvals, agents and skills', async () => {
    const client = await connect();
    const mission = (await d.api('POST', '/api/v1/missions', { body: { name: 'launch', tasks: [{ title: 'a' }, { title: 'b', dependsOn: ['a'] }] } })).body.data;
    const listed = await call(client, 'mission_list', {});
    expect(listed.missions.map((m: { id: string }) => m.id)).toContain(mission.id);
    const status = await call(client, 'mission_status', { missionId: mission.id });
    expect(status.mission.tasks).toHaveLength(2);
    expect(status.mission.progress).toMatchObject({ total: 2, draft: 2 });

    const { task } = await call(client, 'task_create', { title: 'deploy', sideEffects: true });
    const asked = await call(client, 'approval_request', { taskId: task.id, requestedBy: 'ana', title: 'may I deploy?' });
    expect(asked.approval.status).toBe('pending');
    expect((await call(client, 'task_get', { taskId: task.id })).task.status).toBe('awaiting_approval');
    await d.api('POST', `/api/v1/approvals/${asked.approval.id}/approve`, { body: { note: 'go' } });
    expect((await call(client, 'approval_status', { approvalId: asked.approval.id })).approval).toMatchObject({ status: 'approved', note: 'go' });

    expect((await call(client, 'agent_list', {})).agents.map((a: { name: string }) => a.name)).toEqual(['ana', 'bob']);

    await d.api('POST', '/api/v1/skills', { body: { name: 'release-notes', description: 'How to write release notes.', content: '# Release notes\nKeep them short.' } });
    const skill = await call(client, 'skill_get', { name: 'release-notes' });
    expect(skill.skill.content).toContain('Keep them short.');
    await client.close();
  });

  it('gives two agents calling task_next at once different tasks', async () => {
    const [a, b] = [await connect(), await connect()];
    // Leave nothing else claimable, then offer exactly two tasks.
    for (const status of ['pending', 'assigned']) {
      const open = (await d.api('GET', `/api/v1/tasks?status=${status}&limit=200`)).body.data as { id: string }[];
      for (const t of open) await d.api('DELETE', `/api/v1/tasks/${t.id}`);
    }
    const made = [];
    for (const title of ['one', 'two']) made.push((await d.api('POST', '/api/v1/tasks', { body: { title } })).body.data.id);
    const [ra, rb] = await Promise.all([call(a, 'task_next', { agent: 'ana' }), call(b, 'task_next', { agent: 'bob' })]);
    expect(new Set([ra.task.id, rb.task.id])).toEqual(new Set(made));
    expect([ra.task.assignTo, rb.task.assignTo]).toEqual(['ana', 'bob']);
    // Nothing left: both hear so, neither fails.
    const [na, nb] = await Promise.all([call(a, 'task_next', { agent: 'ana' }), call(b, 'task_next', { agent: 'bob' })]);
    expect([na.task, nb.task]).toEqual([null, null]);
    await Promise.all([a.close(), b.close()]);
  });
});

describe('the tools/call fast path', () => {
  /** Runs one message through handleMcp (fast path for tools/call) and returns the JSON answer. */
  async function viaDoor(message: unknown, principal: any = null): Promise<any> {
    let body = '';
    const res = { writeHead() {}, end: (t?: string) => void (body = t ?? '') } as any;
    await handleMcp(d.daemon.app.services.get(MCP_DOOR), principal, { headers: { accept: 'application/json' } } as any, res, message);
    return JSON.parse(body);
  }
  /** The same message through the SDK Server (the path every other method takes). */
  const viaSdk = (message: any, principal: any = null) => d.daemon.app.services.get(MCP_DOOR).transport.exchange(message, { token: '', clientId: 'x', scopes: [], extra: { principal } });

  it.each([
    ['a read', { name: 'agent_list', arguments: {} }, null],
    ['a refusal', { name: 'task_get', arguments: { taskId: 'nope' } }, null],
    ['bad input', { name: 'task_create', arguments: { title: 7 } }, null],
    ['a write with a read-only key', { name: 'task_create', arguments: { title: 'x' } }, { name: 'reader', keyId: 'r', tools: 'read', source: 'project.json' }],
    ['an unknown tool', { name: 'nope', arguments: {} }, null],
  ])('answers %s exactly as the SDK Server does', async (_n, params, principal) => {
    const message = { jsonrpc: '2.0', id: 42, method: 'tools/call', params };
    expect(await viaDoor(message, principal)).toEqual(await viaSdk(message, principal));
  });

  it('leaves malformed calls to the SDK, which refuses them', async () => {
    const answer = await viaDoor({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'agent_list', arguments: [1] } });
    expect(answer).toMatchObject({ id: 5, error: { code: expect.any(Number), message: expect.stringMatching(/invalid/i) } });
    expect(answer.result).toBeUndefined();
  });
});

describe('MCP access', () => {
  it('a key with tools: "read" lists only read-only tools and is refused a write', async () => {
    const client = await connect(READ_KEY);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(READ_TOOLS);
    expect(READ_TOOLS).toEqual(['task_list', 'task_get', 'mission_list', 'mission_status', 'approval_status', 'agent_list', 'skill_get', 'run_list', 'run_get', 'routine_list']);
    const before = await d.daemon.app.events.lastId();
    const refused = await client.callTool({ name: 'task_create', arguments: { title: 'sneaky' } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/^Error forbidden \(403\): .*read-only/);
    expect(await d.daemon.app.events.lastId()).toBe(before);
    expect((await call(client, 'task_list', { limit: 1 })).tasks).toHaveLength(1);
    await client.close();
  });

  it('a wrong or missing key is refused before any tool runs', async () => {
    await expect(connect('wrong-key-0123456789abcdef')).rejects.toThrow(/401|unauthorized|not valid/i);
    await expect(connect(null)).rejects.toThrow(/401|unauthorized|Missing API key/i);
  });

  it('keeps the Host and Origin guards, and answers GET and DELETE 405 (stateless transport)', async () => {
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const headers = { authorization: `Bearer ${d.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const ok = await rawRequest(d.url, { method: 'POST', path: '/mcp', headers, body: init });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).result.tools.length).toBe(TOOLS.filter((t) => t.audience !== 'run').length);
    expect((await rawRequest(d.url, { method: 'POST', path: '/mcp', headers: { ...headers, origin: 'https://evil.example' }, body: init })).status).toBe(403);
    expect((await rawRequest(d.url, { method: 'POST', path: '/mcp', headers: { ...headers, host: 'evil.example' }, body: init })).status).toBe(403);
    // Notifications alone: 202 with no body. A batch: one answer per request, in order.
    const note = await rawRequest(d.url, { method: 'POST', path: '/mcp', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    expect([note.status, note.body]).toEqual([202, '']);
    const batch = await rawRequest(d.url, {
      method: 'POST',
      path: '/mcp',
      headers,
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 'a', method: 'ping' },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'agent_list', arguments: {} } },
      ]),
    });
    expect(batch.status).toBe(200);
    const answers = JSON.parse(batch.body);
    expect(answers.map((a: { id: unknown }) => a.id)).toEqual(['a', 7]);
    expect(answers[1].result.structuredContent.agents.map((a: { name: string }) => a.name)).toEqual(['ana', 'bob']);
    // Not MCP: refused with a JSON-RPC error, never a crash.
    expect((await rawRequest(d.url, { method: 'POST', path: '/mcp', headers, body: '{"hello":"world"}' })).status).toBe(400);
    expect((await rawRequest(d.url, { method: 'POST', path: '/mcp', headers: { ...headers, accept: 'text/html' }, body: init })).status).toBe(406);
    expect((await rawRequest(d.url, { method: 'POST', path: '/mcp', headers: { ...headers, 'mcp-protocol-version': '1999-01-01' }, body: init })).status).toBe(400);
    const unknownMethod = JSON.parse((await rawRequest(d.url, { method: 'POST', path: '/mcp', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'resources/list' }) })).body);
    expect(unknownMethod).toMatchObject({ id: 3, error: { code: -32601 } });
    for (const method of ['GET', 'DELETE']) {
      const r = await rawRequest(d.url, { method, path: '/mcp', headers });
      expect(r.status).toBe(405);
      expect(r.headers.allow).toBe('POST');
    }
  });
});
