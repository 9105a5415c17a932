import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { completion, startFakeUpstream, textChunks, toolCallCompletion, type FakeUpstream } from './fake-upstream.js';
import { rawRequest, startTestDaemon, type TestDaemon } from './harness.js';
import { ALLOWED_ORIGIN } from './origin-cases.js';

const UPSTREAM_KEY = 'sk-upstream-secret-0123456789';

let up: FakeUpstream;
let d: TestDaemon;

const providers = () => ({
  fake: { baseUrl: up.url, apiKey: UPSTREAM_KEY, models: ['m1'] },
});

beforeAll(async () => {
  up = await startFakeUpstream();
  d = await startTestDaemon({
    config: { providers: providers() },
    files: { 'skills/reviewing/SKILL.md': '---\nname: reviewing\ndescription: How we review\n---\nAlways read the tests first.\n' },
  });
  await d.api('POST', '/api/v1/agents', {
    body: { name: 'alice', role: 'reviewer', model: 'fake/m1', systemPrompt: 'You review code.', identity: { displayName: 'Alice', title: 'Staff engineer' } },
  });
  await d.api('POST', '/api/v1/skills/reviewing/assign', { body: { agent: 'alice' } });
});
afterAll(async () => {
  await d.close();
  await up.close();
});
afterEach(() => {
  up.requests.length = 0;
});

const client = () => new OpenAI({ baseURL: `${d.url}/v1`, apiKey: d.key, maxRetries: 0 });
const eventsSince = async (id: number) => await d.daemon.app.events.since(id, 1000);

describe('agent mode', () => {
  it("answers a plain call through the official openai client, with the agent's model, prompt, identity and skills upstream", async () => {
    const before = await d.daemon.app.events.lastId();
    up.script({ json: completion('LGTM') });
    const { data, response } = await client()
      .chat.completions.create({ model: 'svc', messages: [{ role: 'user', content: 'Review this' }], agent: 'alice' } as never)
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('LGTM');
    expect(data.model).toBe('fake/m1');
    const sessionId = response.headers.get('x-session-id');
    expect(sessionId).toBeTruthy();

    const sent = up.requests[0]!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(sent.body.model).toBe('m1');
    expect(sent.body.agent).toBeUndefined();
    const system = sent.body.messages[0];
    expect(system.role).toBe('system');
    expect(system.content).toContain('You review code.');
    expect(system.content).toContain('You are Alice, Staff engineer.');
    expect(system.content).toContain('Always read the tests first.');
    expect(sent.body.messages[1]).toEqual({ role: 'user', content: 'Review this' });

    const fired = await eventsSince(before);
    expect(fired.map((e) => e.name)).toEqual(['session:started', 'completion:finished']);
    expect(fired[1]!.data).toMatchObject({ sessionId, agent: 'alice', model: 'fake/m1', finishReason: 'stop', usage: { total_tokens: 5 } });
    expect(typeof fired[1]!.data.durationMs).toBe('number');
    // The upstream's key never leaves the daemon.
    expect(JSON.stringify(fired)).not.toContain(UPSTREAM_KEY);
    expect(d.logs.join('')).not.toContain(UPSTREAM_KEY);
  });

  it('streams chunks, usage and [DONE] through the openai client', async () => {
    up.script({ stream: textChunks(['Hel', 'lo', '!']) });
    const stream = await client().chat.completions.create({
      model: 'fake/m1',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
      agent: 'alice',
    } as never);
    let text = '';
    let usage: unknown = null;
    for await (const chunk of stream as unknown as AsyncIterable<any>) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('Hello!');
    expect(usage).toEqual({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 });
    expect(up.requests[0]!.body.stream).toBe(true);
    expect(up.requests[0]!.body.stream_options).toEqual({ include_usage: true });
  });

  it('ends the raw stream with data: [DONE]', async () => {
    up.script({ stream: textChunks(['a'], false) });
    const res = await fetch(`${d.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }], stream: true, agent: 'alice' }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
  });

  it('continues a session with x-session-id, and stores it with vault values redacted', async () => {
    await d.api('POST', '/api/v1/vault/entries', { body: { agent: 'alice', service: 'github', type: 'api_key', credentials: { token: 'ghp_secretvalue42' } } });
    up.script({ json: completion('first') }, { json: completion('second') });
    const before = await d.daemon.app.events.lastId();
    const first = await client()
      .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'my token is ghp_secretvalue42' }], agent: 'alice' } as never)
      .withResponse();
    const sessionId = first.response.headers.get('x-session-id')!;
    await client().chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'and then?' }], agent: 'alice' } as never, { headers: { 'x-session-id': sessionId } });
    const second = up.requests[1]!.body.messages.slice(1);
    expect(second.map((m: { content: string }) => m.content)).toEqual(['my token is [REDACTED]', 'first', 'and then?']);
    const stored = (await d.daemon.app.db.prepare('SELECT messages FROM chat_sessions WHERE id = ?').get(sessionId)) as { messages: string };
    expect(stored.messages).not.toContain('ghp_secretvalue42');
    expect(stored.messages).toContain('[REDACTED]');
    // One session: started once, two completions.
    expect((await eventsSince(before)).map((e) => e.name)).toEqual(['session:started', 'completion:finished', 'completion:finished']);
  });

  it('aborts the upstream request when the client disconnects mid-stream', async () => {
    up.script({ stream: textChunks(['slow']).slice(0, 2), stall: true });
    const ctrl = new AbortController();
    const res = await fetch(`${d.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }], stream: true, agent: 'alice' }),
      signal: ctrl.signal,
    });
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk arrived: the upstream call is under way
    ctrl.abort();
    await up.requests[0]!.closed;
    expect(up.requests[0]!.aborted()).toBe(true);
  });
});

describe('errors in the OpenAI shape', () => {
  const post = (body: unknown, key: string | null = d.key) =>
    fetch(`${d.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

  it.each([
    ['unknown agent', { messages: [{ role: 'user', content: 'x' }], agent: 'nobody' }, 404, 'not_found', /nobody/],
    ['unknown provider', { messages: [{ role: 'user', content: 'x' }], model: 'nope/m' }, 400, 'invalid_request', /Unknown provider "nope"/],
    ['missing key names the variable', { messages: [{ role: 'user', content: 'x' }], model: 'openai/gpt-4o' }, 400, 'invalid_request', /set OPENAI_API_KEY/],
    ['invalid body', { messages: [] }, 400, 'invalid_request', /messages/],
  ])('%s', async (_name, body, status, code, message) => {
    const r = await post(body);
    expect(r.status).toBe(status);
    expect(r.body.error).toMatchObject({ code, type: expect.any(String) });
    expect(r.body.error.message).toMatch(message);
    expect(r.body.ok).toBeUndefined();
  });

  it('answers 401 in the OpenAI shape, which the openai client reports as an AuthenticationError', async () => {
    const bad = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: 'wrong-key-0123456789', maxRetries: 0 });
    await expect(bad.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('never follows an upstream redirect: a 301 is an upstream failure', async () => {
    up.script({ status: 301, json: {}, headers: { location: 'http://169.254.169.254/v1/chat/completions' } });
    const r = await post({ messages: [{ role: 'user', content: 'x' }], agent: 'alice' });
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ code: 'upstream_error', upstream_status: 301 });
    expect(up.requests.length).toBe(1);
  });

  it('answers an upstream failure 502 carrying the upstream status', async () => {
    up.script({ status: 400, json: { error: { message: 'model m1 is not served', type: 'invalid_request_error' } } });
    const r = await post({ messages: [{ role: 'user', content: 'x' }], agent: 'alice' });
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ code: 'upstream_error', upstream_status: 400 });
    expect(r.body.error.message).toMatch(/fake answered 400: model m1 is not served/);
  });
});

describe('GET /v1/models/{model}', () => {
  it('answers client.models.retrieve with the model GET /v1/models lists, and 404 NotFoundError for any other', async () => {
    const listed: OpenAI.Models.Model[] = [];
    for await (const m of client().models.list()) listed.push(m);
    const m1 = listed.find((m) => m.id === 'fake/m1');
    expect(m1).toBeDefined();
    expect(await client().models.retrieve('fake/m1')).toEqual(m1);
    expect(await client().models.retrieve('fake/m1')).toEqual({ id: 'fake/m1', object: 'model', created: 0, owned_by: 'fake' });
    for (const missing of ['fake/m9', 'nope/m1', 'openai/gpt-4o', 'm1']) {
      const err = await client()
        .models.retrieve(missing)
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(err, missing).toBeInstanceOf(OpenAI.NotFoundError);
      expect((err as InstanceType<typeof OpenAI.NotFoundError>).error).toMatchObject({ code: 'not_found', type: 'not_found_error', message: expect.stringContaining(`"${missing}"`) });
    }
  });
});

describe('orchestrator mode', () => {
  it('runs the management tools the model calls, emits their ordinary events, and says what was done', async () => {
    const o = await startTestDaemon({ config: { providers: providers(), orchestrator: { model: 'fake/m1' } } });
    try {
      up.script(
        { json: toolCallCompletion([{ id: 'call_1', name: 'task_create', args: { title: 'Write the release notes' } }]) },
        { json: completion('I created the task "Write the release notes".') },
      );
      const before = await o.daemon.app.events.lastId();
      const answer = await new OpenAI({ baseURL: `${o.url}/v1`, apiKey: o.key, maxRetries: 0 }).chat.completions.create({
        model: 'svc',
        messages: [{ role: 'user', content: 'Add a task to write the release notes' }],
      });
      const content = answer.choices[0]!.message.content!;
      expect(content).toContain('I created the task');
      expect(content).toContain('[svc] Tool calls: task_create (ok).');
      expect(answer.model).toBe('fake/m1');
      expect(answer.usage?.total_tokens).toBe(20);

      // The tools went upstream as functions, and the tool's result came back to the model.
      const first = up.requests[0]!.body;
      expect(first.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(expect.arrayContaining(['task_create', 'task_list', 'agent_list']));
      const second = up.requests[1]!.body.messages;
      const toolTurn = second.find((m: { role: string }) => m.role === 'tool');
      expect(toolTurn.tool_call_id).toBe('call_1');
      expect(JSON.parse(toolTurn.content).task.title).toBe('Write the release notes');

      const fired = await o.daemon.app.events.since(before, 100);
      expect(fired.map((e) => e.name)).toEqual(['task:created', 'session:started', 'completion:finished']);
      expect(fired[0]!.data).toMatchObject({ title: 'Write the release notes', status: 'pending' });
      expect(fired[2]!.data).toMatchObject({ agent: null, model: 'fake/m1', finishReason: 'stop' });
      const tasks = (await o.api('GET', '/api/v1/tasks')).body.data;
      expect(tasks.map((t: { title: string }) => t.title)).toContain('Write the release notes');
    } finally {
      await o.close();
    }
  });

  it('streams the final answer, returns a failed tool call to the model, and stops at orchestrator.maxTurns', async () => {
    const o = await startTestDaemon({ config: { providers: providers(), orchestrator: { model: 'fake/m1', maxTurns: 2 } } });
    try {
      const toolChunks = (id: string, name: string, args: unknown) => [
        {
          id: 'c',
          object: 'chat.completion.chunk',
          created: 1,
          model: 'm1',
          choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: '' } }] }, finish_reason: null }],
        },
        {
          id: 'c',
          object: 'chat.completion.chunk',
          created: 1,
          model: 'm1',
          choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: JSON.stringify(args) } }] }, finish_reason: 'tool_calls' }],
        },
      ];
      up.script({ stream: toolChunks('a', 'task_get', { taskId: 'nope' }) }, { stream: textChunks(['No such task.']) });
      const stream = await new OpenAI({ baseURL: `${o.url}/v1`, apiKey: o.key, maxRetries: 0 }).chat.completions.create({
        model: 'svc',
        messages: [{ role: 'user', content: 'Show task nope' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let usage: unknown = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      expect(text).toBe('No such task.\n\n[svc] Tool calls: task_get (failed).');
      expect(usage).toMatchObject({ total_tokens: expect.any(Number) });
      const toolTurn = up.requests[1]!.body.messages.find((m: { role: string }) => m.role === 'tool');
      expect(JSON.parse(toolTurn.content).error.code).toBe('not_found');

      // A model that only ever calls tools is stopped after maxTurns tool turns.
      up.requests.length = 0;
      up.script({ json: toolCallCompletion([{ id: 'x1', name: 'task_list', args: {} }]) }, { json: toolCallCompletion([{ id: 'x2', name: 'task_list', args: {} }]) });
      const looping = await o.api('POST', '/v1/chat/completions', { body: { messages: [{ role: 'user', content: 'loop' }] } });
      expect(looping.status).toBe(200);
      expect(up.requests.length).toBe(2);
      expect(looping.body.choices[0].finish_reason).toBe('length');
      expect(looping.body.choices[0].message.content).toContain('Stopped after 2 tool turns');
    } finally {
      await o.close();
    }
  });

  it('offers a tools: "read" key only the read-only tools', async () => {
    const readKey = 'read-only-chat-key-0123456789';
    const o = await startTestDaemon({ config: { providers: providers(), orchestrator: { model: 'fake/m1' }, apiKeys: [{ name: 'reader', key: readKey, tools: 'read' }] } });
    try {
      up.script({ json: completion('ok') });
      const r = await o.api('POST', '/v1/chat/completions', { key: readKey, body: { messages: [{ role: 'user', content: 'hi' }] } });
      expect(r.status).toBe(200);
      const names = up.requests[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name);
      expect(names).toContain('task_list');
      expect(names).not.toContain('task_create');
    } finally {
      await o.close();
    }
  });
});

describe("the kernel's own failures: OpenAI-shaped on the chat path, the envelope elsewhere", () => {
  // A daemon of its own: a small body limit and an allowed origin, and a failed-auth count of its own.
  const MAX_BODY = 2048;
  let k: TestDaemon;
  beforeAll(async () => {
    k = await startTestDaemon({ config: { server: { allowedOrigins: [ALLOWED_ORIGIN], maxBodyBytes: MAX_BODY } } });
  });
  afterAll(async () => {
    await k.close();
  });

  const CHAT = '/v1/chat/completions';
  const SVC = '/api/v1/tasks/no-such-task/transition';
  const okBody = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] });
  const big = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(4000) }] });

  /** How a case changes a valid POST with a key: another method, headers changed (null: left out), another body. */
  interface Change {
    method?: string;
    headers?: Record<string, string | null>;
    body?: string;
  }
  type Case = [name: string, change: Change, status: number, code: string, message: (path: string) => string, openAiType: string, openAiClass: typeof OpenAI.APIError];
  const cases: Case[] = [
    [
      'a Host that is not allowed',
      { headers: { host: 'evil.example.com' } },
      403,
      'forbidden',
      () => 'Host header not allowed; add it to server.allowedHosts in project.json to serve it.',
      'permission_error',
      OpenAI.PermissionDeniedError,
    ],
    [
      'a cross-site Origin',
      { headers: { origin: 'https://evil.example.com' } },
      403,
      'forbidden',
      () => 'Origin not allowed; add it to server.allowedOrigins in project.json to allow it.',
      'permission_error',
      OpenAI.PermissionDeniedError,
    ],
    ['GET', { method: 'GET', body: '' }, 405, 'method_not_allowed', (p) => `GET is not allowed on ${p}; allowed: POST.`, 'invalid_request_error', OpenAI.APIError],
    ['PUT', { method: 'PUT' }, 405, 'method_not_allowed', (p) => `PUT is not allowed on ${p}; allowed: POST.`, 'invalid_request_error', OpenAI.APIError],
    ['no key', { headers: { authorization: null } }, 401, 'unauthorized', () => 'Missing API key: send Authorization: Bearer <key>.', 'authentication_error', OpenAI.AuthenticationError],
    [
      'a body over server.maxBodyBytes',
      { body: big },
      413,
      'payload_too_large',
      () => `The request body is ${Buffer.byteLength(big)} bytes; the limit is ${MAX_BODY}.`,
      'invalid_request_error',
      OpenAI.APIError,
    ],
    [
      'a body that is not JSON',
      { headers: { 'content-type': 'text/plain' } },
      415,
      'unsupported_media_type',
      () => 'Content-Type "text/plain" is not JSON; send application/json.',
      'invalid_request_error',
      OpenAI.APIError,
    ],
  ];

  /** The request of a case, over node:http (fetch cannot send another Host). */
  function send(path: string, change: Change, base: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
    const headers: Record<string, string> = { ...(base.headers ?? { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' }) };
    for (const [name, value] of Object.entries(change.headers ?? {})) {
      if (value === null) delete headers[name];
      else headers[name] = value;
    }
    const body = change.body ?? base.body ?? okBody;
    if (body) headers['content-length'] = String(Buffer.byteLength(body));
    else delete headers['content-length'];
    return rawRequest(k.url, { method: change.method ?? base.method ?? 'POST', path, headers, ...(body ? { body } : {}) });
  }

  // /v1/responses declares the same error format, and gets all of it without code of its own.
  const pathCases = [CHAT, '/v1/responses'].flatMap((path) => cases.map((c) => [path, ...c] as const));
  it.each(pathCases)('%s, %s: answers in the OpenAI shape', async (path, _name, change, status, code, message, type) => {
    const res = await send(path, change);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.body)).toEqual({ error: { message: message(path), type, code, param: null } });
    if (status === 405) expect(res.headers.allow).toBe('POST');
    if (status === 401) expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('GET /v1/models: a foreign Host and a POST answer in the OpenAI shape too', async () => {
    const host = await send('/v1/models', { method: 'GET', body: '', headers: { host: 'evil.example.com' } });
    expect(host.status).toBe(403);
    expect(JSON.parse(host.body).error).toMatchObject({ type: 'permission_error', code: 'forbidden' });
    const post = await send('/v1/models', {});
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    expect(JSON.parse(post.body).error).toMatchObject({ type: 'invalid_request_error', code: 'method_not_allowed' });
  });

  it.each(cases)('%s: an /api/v1 path still answers the svc envelope', async (_name, change, status, code, message) => {
    const res = await send(SVC, change, { body: JSON.stringify({ to: 'in_progress' }) });
    expect(res.status).toBe(status);
    expect(JSON.parse(res.body)).toEqual({ ok: false, code, error: message(SVC) });
  });

  it.each(cases)('%s: the openai package surfaces it as its error class, with code and type', async (_name, change, status, code, message, type, errorClass) => {
    // The client's own request, changed on its way by a fetch of the test's.
    const fetchChanged = async (url: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
      const u = new URL(String(url));
      const headers = Object.fromEntries(new Headers(init.headers).entries());
      const res = await send(u.pathname, change, { method: init.method, headers, body: typeof init.body === 'string' ? init.body : undefined });
      const out = new Headers();
      for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') out.set(name, value);
      return new Response(res.body, { status: res.status, headers: out });
    };
    const client = new OpenAI({ baseURL: `${k.url}/v1`, apiKey: k.key, maxRetries: 0, fetch: fetchChanged });
    const err = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }).then(
      () => expect.unreachable('the request succeeded'),
      (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
    );
    // Exactly that class: 405, 413 and 415 have none of their own in the client, and are its base class.
    expect(err.constructor).toBe(errorClass);
    expect(err.status).toBe(status);
    expect(err).toMatchObject({ code, type, param: null });
    expect(err.message).toBe(`${status} ${message(CHAT)}`);
  });
});
