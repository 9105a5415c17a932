import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { completion, startFakeUpstream, textChunks, toolCallCompletion, type FakeUpstream } from './fake-upstream.js';
import { getResponse, RESPONSES_KEPT, saveResponse } from '../src/resources/chat/responses-store.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

// POST /v1/responses and GET /v1/models through the official openai package, unchanged: plain and
// streamed, tools across two turns, previous_response_id, the orchestrator's loop, and upstreams
// that speak chat completions or the Responses API themselves.

let up: FakeUpstream;
let d: TestDaemon;

beforeAll(async () => {
  up = await startFakeUpstream();
  d = await startTestDaemon({
    config: {
      providers: {
        fake: { baseUrl: up.url, apiKey: 'sk-resp-upstream-0123456789', models: ['m1', 'm2'] },
        native: { baseUrl: up.url, apiKey: 'sk-resp-native-0123456789', api: 'responses', models: ['r1'] },
      },
      orchestrator: { model: 'fake/m1' },
    },
  });
  await d.api('POST', '/api/v1/agents', { body: { name: 'alice', model: 'fake/m1', systemPrompt: 'You review code.' } });
  await d.api('POST', '/api/v1/agents', { body: { name: 'nat', model: 'native/r1' } });
});
afterAll(async () => {
  await d.close();
  await up.close();
});
afterEach(async () => {
  up.requests.length = 0;
  // A test's upstream failure must not cool the provider down for the next.
  await d.daemon.app.db.prepare('DELETE FROM provider_health').run();
});

const client = () => new OpenAI({ baseURL: `${d.url}/v1`, apiKey: d.key, maxRetries: 0 });
const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};
const chunk = (delta: unknown, finish: string | null = null) => ({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta, finish_reason: finish }] });
const toolStream = () => [
  chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_w', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '"Zürich"}' } }] }),
  chunk({}, 'tool_calls'),
  { ...chunk({}), choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } },
];

describe('POST /v1/responses to an agent (chat-completions upstream)', () => {
  it('answers client.responses.create with a Response whose output_text is the answer; instructions go upstream for this turn only', async () => {
    up.script({ json: completion('LGTM') });
    const { data: r, response } = await client()
      .responses.create({ model: 'svc', input: 'Review PR 12', instructions: 'Be brief.', agent: 'alice' } as never)
      .withResponse();
    expect(r.object).toBe('response');
    expect(r.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(r.status).toBe('completed');
    expect(r.output_text).toBe('LGTM');
    expect(r.model).toBe('fake/m1');
    expect(r.usage).toMatchObject({ input_tokens: 3, output_tokens: 2, total_tokens: 5 });
    expect(response.headers.get('x-session-id')).toBeTruthy();
    const sent = up.requests[0]!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.body.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'system', 'user']);
    expect(sent.body.messages[0].content).toContain('You review code.');
    expect(sent.body.messages[1].content).toBe('Be brief.');
    expect(sent.body.messages[2]).toEqual({ role: 'user', content: 'Review PR 12' });

    // previous_response_id continues the conversation; the earlier instructions are not resent.
    up.script({ json: completion('Still LGTM') });
    const next = await client().responses.create({ model: 'svc', input: 'And now?', previous_response_id: r.id, agent: 'alice' } as never);
    expect(next.output_text).toBe('Still LGTM');
    expect(next.previous_response_id).toBe(r.id);
    expect(up.requests[1]!.body.messages.map((m: { content: string }) => m.content).slice(1)).toEqual(['Review PR 12', 'LGTM', 'And now?']);
  });

  it('streams the response.* events the openai stream helper rebuilds into the final Response', async () => {
    up.script({ stream: textChunks(['Hel', 'lo ', 'wörld']) });
    const events: string[] = [];
    const s = client().responses.stream({ model: 'svc', input: 'hi', agent: 'alice' } as never);
    s.on('event', (e) => events.push(e.type));
    const final = await s.finalResponse();
    expect(final.output_text).toBe('Hello wörld');
    expect(final.status).toBe('completed');
    expect(events).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  for (const streamed of [false, true]) {
    it(`returns a function_call item and continues with its output on the next turn (${streamed ? 'streamed' : 'plain'})`, async () => {
      up.script(streamed ? { stream: toolStream() } : { json: toolCallCompletion([{ id: 'call_w', name: 'get_weather', args: { city: 'Zürich' } }]) });
      let first;
      if (streamed) {
        const s = await client().responses.create({ model: 'svc', input: 'Weather in Zürich?', tools: [weatherTool], stream: true, agent: 'alice' } as never);
        for await (const e of s as unknown as AsyncIterable<{ type: string; response?: unknown }>) if (e.type === 'response.completed') first = e.response as OpenAI.Responses.Response;
      } else {
        first = await client().responses.create({ model: 'svc', input: 'Weather in Zürich?', tools: [weatherTool], agent: 'alice' } as never);
      }
      const call = first!.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
      expect(call).toMatchObject({ type: 'function_call', call_id: 'call_w', name: 'get_weather', arguments: '{"city":"Zürich"}', status: 'completed' });
      // The tool went upstream as a chat function tool.
      expect(up.requests[0]!.body.tools).toEqual([{ type: 'function', function: { name: 'get_weather', description: 'The weather', parameters: weatherTool.parameters, strict: false } }]);

      up.script({ json: completion('Sunny in Zürich.') });
      const second = await client().responses.create({
        model: 'svc',
        previous_response_id: first!.id,
        input: [{ type: 'function_call_output', call_id: 'call_w', output: '{"sky":"clear"}' }],
        tools: [weatherTool],
        agent: 'alice',
      } as never);
      expect(second.output_text).toBe('Sunny in Zürich.');
      const sent = up.requests[1]!.body.messages;
      // One merged call, then its result, whether the call came streamed or not.
      expect(sent.slice(-3)).toEqual([
        { role: 'user', content: 'Weather in Zürich?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_w', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Zürich"}' } }] },
        { role: 'tool', tool_call_id: 'call_w', content: '{"sky":"clear"}' },
      ]);
    });
  }

  it('takes a whole conversation as input items, as clients that keep their own history (Codex, store: false) send it', async () => {
    up.script({ json: completion('Done.') });
    const r = await client().responses.create({
      model: 'svc',
      store: false,
      agent: 'alice',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Work in /repo.' }] },
        { role: 'user', content: [{ type: 'input_text', text: 'List files' }] },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{"cmd":"ls"}' },
        { type: 'function_call', call_id: 'c2', name: 'shell', arguments: '{"cmd":"pwd"}' },
        { type: 'function_call_output', call_id: 'c1', output: 'a.ts' },
        { type: 'function_call_output', call_id: 'c2', output: '/repo' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Two results.' }] },
        { role: 'user', content: 'ok' },
      ],
    } as never);
    expect(r.output_text).toBe('Done.');
    expect(r.store).toBe(false);
    expect(up.requests[0]!.body.messages.slice(1)).toEqual([
      { role: 'developer', content: 'Work in /repo.' },
      { role: 'user', content: 'List files' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'shell', arguments: '{"cmd":"ls"}' } },
          { id: 'c2', type: 'function', function: { name: 'shell', arguments: '{"cmd":"pwd"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'a.ts' },
      { role: 'tool', tool_call_id: 'c2', content: '/repo' },
      { role: 'assistant', content: 'Two results.' },
      { role: 'user', content: 'ok' },
    ]);
    // store: false kept nothing to continue from.
    const err = await client()
      .responses.create({ model: 'svc', input: 'more', previous_response_id: r.id, agent: 'alice' } as never)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).error).toMatchObject({ type: 'not_found_error', code: 'not_found', param: 'previous_response_id' });
  });
});

describe('x-svc-agent: choosing the agent by header, for clients that cannot add a body field (Codex)', () => {
  it("routes both wires to the agent, with the client's own tools, and refuses a malformed name", async () => {
    const codex = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: d.key, maxRetries: 0, defaultHeaders: { 'x-svc-agent': 'alice' } });
    up.script({ stream: textChunks(['ok']) }, { json: completion('ok too') });
    const r = await codex.responses.stream({ model: 'fake/m1', input: 'hi', tools: [weatherTool] }).finalResponse();
    expect(r.output_text).toBe('ok');
    const c = await codex.chat.completions.create({ model: 'fake/m1', messages: [{ role: 'user', content: 'hi' }] });
    expect(c.choices[0]!.message.content).toBe('ok too');
    for (const sent of up.requests) expect(sent.body.messages[0].content).toContain('You review code.');
    // The agent path: the client's tool went upstream, not the orchestrator's.
    expect(up.requests[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['get_weather']);

    const bad = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: d.key, maxRetries: 0, defaultHeaders: { 'x-svc-agent': 'x'.repeat(65) } });
    const err = await bad.responses.create({ model: 'svc', input: 'hi' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as Error).message).toContain('x-svc-agent');
  });
});

describe('POST /v1/responses errors in the OpenAI shape', () => {
  it('refuses a malformed tool or an unknown input item, naming the field', async () => {
    for (const [body, param, message] of [
      [{ tools: [{ type: 'function', description: 'no name' }] }, 'tools.0.name', 'expected string'],
      [{ tools: [{ type: 'namespace', name: 'ns', tools: [{ type: 'function' }] }] }, 'tools.0.tools.0.name', 'expected string'],
      [
        {
          input: [
            { role: 'user', content: 'ok' },
            { type: 'item_reference', id: 'x' },
          ],
        },
        'input',
        'item 1, type: Invalid discriminator value',
      ],
      [{ input: [{ type: 'function_call', name: 'f' }] }, 'input', 'item 0, call_id'],
    ] as const) {
      const err = await client()
        .responses.create({ model: 'svc', input: 'x', agent: 'alice', ...body } as never)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request', param });
      expect((err as Error).message).toContain(message);
    }
    expect(up.requests).toHaveLength(0);
  });

  it('answers an upstream failure before any output 502, and one mid-stream with response.failed', async () => {
    up.script({ status: 500, json: { error: { message: 'boom' } } });
    const err = await client()
      .responses.create({ model: 'svc', input: 'x', agent: 'alice' } as never)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(502);

    await d.daemon.app.db.prepare('DELETE FROM provider_health').run();
    up.script({ stream: [chunk({ content: 'par' }), { error: { message: 'overloaded', code: 'server_error' } }] });
    const types: string[] = [];
    let failed: OpenAI.Responses.Response | undefined;
    const s = await client().responses.create({ model: 'svc', input: 'x', agent: 'alice', stream: true } as never);
    for await (const e of s as unknown as AsyncIterable<{ type: string; response?: OpenAI.Responses.Response }>) {
      types.push(e.type);
      if (e.type === 'response.failed') failed = e.response;
    }
    expect(types.at(-1)).toBe('response.failed');
    expect(failed!.error).toMatchObject({ code: 'upstream_error' });
    expect(failed!.error!.message).toContain('overloaded');
  });
});

describe('the orchestrator through the Responses API', () => {
  for (const streamed of [false, true]) {
    it(`runs its tool loop and answers what it did (${streamed ? 'streamed' : 'plain'})`, async () => {
      const call = [
        chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'task_create', arguments: '{"title":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: `"Ship the Responses API ${streamed}"}` } }] }, 'tool_calls'),
      ];
      if (streamed) up.script({ stream: call }, { stream: textChunks(['Created it.']) });
      else up.script({ json: toolCallCompletion([{ id: 'call_1', name: 'task_create', args: { title: 'Ship the Responses API false' } }]) }, { json: completion('Created it.') });
      const before = await d.daemon.app.events.lastId();
      const r = streamed
        ? await client().responses.stream({ model: 'svc', input: 'Add a task: Ship the Responses API' }).finalResponse()
        : await client().responses.create({ model: 'svc', input: 'Add a task: Ship the Responses API' });
      expect(r.output_text).toBe('Created it.\n\n[svc] Tool calls: task_create (ok).');
      const fired = await d.daemon.app.events.since(before, 100);
      expect(fired.map((e) => e.name)).toEqual(['task:created', 'session:started', 'completion:finished']);
      expect(fired[0]!.data).toMatchObject({ title: `Ship the Responses API ${streamed}` });
      expect(up.requests[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toContain('task_create');
      expect(up.requests[1]!.body.messages.find((m: { role: string }) => m.role === 'tool').tool_call_id).toBe('call_1');
    });
  }
});

describe('an upstream that speaks the Responses API (providers.<id>.api: "responses")', () => {
  const upstreamResponse = (output: unknown[]) => ({
    id: 'resp_up',
    object: 'response',
    created_at: 1,
    status: 'completed',
    model: 'r1',
    output,
    usage: { input_tokens: 4, output_tokens: 2, total_tokens: 6 },
  });

  it('is sent a Responses request and its answer is translated, for chat completions and for responses', async () => {
    up.script({ json: upstreamResponse([{ type: 'message', id: 'm', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'native hi', annotations: [] }] }]) });
    const c = await client().chat.completions.create({ model: 'svc', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50, agent: 'nat' } as never);
    expect(c.choices[0]!.message.content).toBe('native hi');
    expect(c.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 });
    const sent = up.requests[0]!;
    expect(sent.path).toBe('/v1/responses');
    expect(sent.headers.authorization).toBe('Bearer sk-resp-native-0123456789');
    expect(sent.body).toMatchObject({
      model: 'r1',
      store: false,
      max_output_tokens: 50,
      input: [
        { type: 'message', role: 'system' },
        { type: 'message', role: 'user', content: 'hi' },
      ],
    });
    expect(sent.body.messages).toBeUndefined();

    up.script({ json: upstreamResponse([{ type: 'function_call', id: 'fc', status: 'completed', call_id: 'call_n', name: 'get_weather', arguments: '{"city":"Oslo"}' }]) });
    const r = await client().responses.create({ model: 'svc', input: 'Weather?', tools: [weatherTool], agent: 'nat' } as never);
    expect(r.output[0]).toMatchObject({ type: 'function_call', call_id: 'call_n', name: 'get_weather', arguments: '{"city":"Oslo"}' });
    expect(up.requests[1]!.body.tools).toEqual([{ type: 'function', name: 'get_weather', description: 'The weather', parameters: weatherTool.parameters, strict: false }]);
  });

  it("streams: the upstream's response.* events become chunks, and the client its own events again", async () => {
    up.script({
      stream: [
        { type: 'response.created', sequence_number: 0, response: { id: 'resp_up', created_at: 1, model: 'r1', status: 'in_progress', output: [] } },
        { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { type: 'message', id: 'm', role: 'assistant', content: [], status: 'in_progress' } },
        { type: 'response.output_text.delta', sequence_number: 2, item_id: 'm', output_index: 0, content_index: 0, delta: 'stre' },
        { type: 'response.output_text.delta', sequence_number: 3, item_id: 'm', output_index: 0, content_index: 0, delta: 'amed' },
        {
          type: 'response.output_item.added',
          sequence_number: 4,
          output_index: 1,
          item: { type: 'function_call', id: 'fc', call_id: 'call_s', name: 'get_weather', arguments: '', status: 'in_progress' },
        },
        { type: 'response.function_call_arguments.delta', sequence_number: 5, item_id: 'fc', output_index: 1, delta: '{"city":' },
        { type: 'response.function_call_arguments.delta', sequence_number: 6, item_id: 'fc', output_index: 1, delta: '"Rome"}' },
        { type: 'response.completed', sequence_number: 7, response: { id: 'resp_up', status: 'completed', usage: { input_tokens: 5, output_tokens: 5, total_tokens: 10 } } },
      ],
    });
    const final = await client()
      .responses.stream({ model: 'svc', input: 'go', tools: [weatherTool], agent: 'nat' } as never)
      .finalResponse();
    expect(final.output_text).toBe('streamed');
    expect(final.output[1]).toMatchObject({ type: 'function_call', call_id: 'call_s', arguments: '{"city":"Rome"}' });
    expect(final.usage).toMatchObject({ input_tokens: 5, output_tokens: 5, total_tokens: 10 });
    expect(up.requests[0]!.body.stream).toBe(true);
  });
});

describe('GET /v1/models', () => {
  it('lists the models of the providers that can be called, for client.models.list()', async () => {
    const ids: string[] = [];
    for await (const m of client().models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining(['fake/m1', 'fake/m2', 'native/r1', 'ollama/llama3.2']));
    expect(ids).not.toContain('openai/gpt-4o-mini'); // no OPENAI_API_KEY in the daemon's environment
  });
});

describe("Codex's tools: namespaces, custom tools, tool_search and hosted tools (issue 30, item 3)", () => {
  const patch = '*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n';
  const codexTools = [
    { type: 'function', name: 'exec_command', description: 'Run', parameters: { type: 'object', properties: { cmd: { type: 'string' } } }, strict: false },
    { type: 'custom', name: 'apply_patch', description: 'Edit files.', format: { type: 'grammar', syntax: 'lark', definition: 'start: begin_patch' } },
    {
      type: 'namespace',
      name: 'mcp__svc',
      description: 'Tools in the mcp__svc namespace.',
      tools: [
        { type: 'function', name: 'task_list', description: 'List tasks', parameters: { type: 'object', properties: {} } },
        { type: 'function', name: 'task_create', description: 'Create a task', parameters: { type: 'object', properties: { title: { type: 'string' } } } },
      ],
    },
    { type: 'tool_search', execution: 'client', description: 'Find tools', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } },
    { type: 'web_search', external_web_access: false },
  ];
  const calls = [
    { id: 'call_ns', name: 'mcp__svc__task_list', args: {} },
    { id: 'call_patch', name: 'apply_patch', args: { input: patch } },
    { id: 'call_search', name: 'tool_search', args: { query: 'deploy' } },
  ];
  const streamedCalls = () => [
    ...calls.flatMap((c, index) => {
      const text = JSON.stringify(c.args);
      return [
        chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: text.slice(0, 3) } }] }),
        chunk({ tool_calls: [{ index, function: { arguments: text.slice(3) } }] }),
      ];
    }),
    chunk({}, 'tool_calls'),
  ];
  const expectedItems = [
    { type: 'function_call', call_id: 'call_ns', name: 'task_list', namespace: 'mcp__svc', arguments: '{}', status: 'completed' },
    { type: 'custom_tool_call', call_id: 'call_patch', name: 'apply_patch', input: patch, status: 'completed' },
    { type: 'tool_search_call', call_id: 'call_search', execution: 'client', arguments: { query: 'deploy' }, status: 'completed' },
  ];

  for (const streamed of [false, true]) {
    it(`gives the chat model functions and maps its calls back to the items Codex runs (${streamed ? 'streamed' : 'plain'})`, async () => {
      up.script(streamed ? { stream: streamedCalls() } : { json: toolCallCompletion(calls) });
      const res = await fetch(`${d.url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${d.key}`, 'content-type': 'application/json', 'x-svc-agent': 'alice' },
        body: JSON.stringify({ model: 'fake/m1', input: 'go', tools: codexTools, tool_choice: 'auto', stream: streamed, store: false }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-svc-tools-omitted')).toBe('web_search');
      let output: unknown[];
      const types: string[] = [];
      if (streamed) {
        const events = (await res.text())
          .split('\n\n')
          .filter(Boolean)
          .map((frame) =>
            JSON.parse(
              frame
                .split('\n')
                .find((l) => l.startsWith('data: '))!
                .slice(6),
            ),
          );
        types.push(...events.map((e) => e.type));
        output = events.at(-1).response.output;
        expect(events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item)).toEqual(expectedItems.map((i) => ({ ...i, id: expect.any(String) })));
        expect(events.find((e) => e.type === 'response.custom_tool_call_input.done')).toMatchObject({ input: patch });
      } else {
        output = ((await res.json()) as { output: unknown[] }).output;
      }
      expect(output).toEqual(expectedItems.map((i) => ({ ...i, id: expect.any(String) })));
      // Only a function's arguments stream as deltas ('{}' in one piece); a custom tool's input comes whole.
      if (streamed) expect(types.filter((t) => t.endsWith('.delta'))).toEqual(['response.function_call_arguments.delta']);

      const sent = up.requests[0]!.body;
      expect(sent.tools.map((t: { type: string; function: { name: string } }) => `${t.type}:${t.function.name}`)).toEqual([
        'function:exec_command',
        'function:apply_patch',
        'function:mcp__svc__task_list',
        'function:mcp__svc__task_create',
        'function:tool_search',
      ]);
      const custom = sent.tools[1].function;
      expect(custom.parameters).toEqual({ type: 'object', properties: { input: { type: 'string', description: expect.any(String) } }, required: ['input'], additionalProperties: false });
      expect(custom.description).toContain('Edit files.');
      expect(custom.description).toContain('start: begin_patch'); // the grammar the input must match
    });
  }

  it("sends the next turn's call items and outputs back as the functions the model knows, with the tools a search loaded", async () => {
    up.script({ json: completion('Deployed.') });
    const r = await client().responses.create({
      model: 'svc',
      agent: 'alice',
      store: false,
      tools: codexTools,
      input: [
        { role: 'user', content: 'go' },
        { type: 'function_call', call_id: 'call_ns', name: 'task_list', namespace: 'mcp__svc', arguments: '{}' },
        { type: 'custom_tool_call', call_id: 'call_patch', name: 'apply_patch', input: patch },
        { type: 'tool_search_call', call_id: 'call_search', execution: 'client', status: 'completed', arguments: { query: 'deploy' } },
        { type: 'function_call_output', call_id: 'call_ns', output: '{"tasks":[]}' },
        { type: 'custom_tool_call_output', call_id: 'call_patch', output: 'Success.' },
        {
          type: 'tool_search_output',
          call_id: 'call_search',
          execution: 'client',
          status: 'completed',
          tools: [
            {
              type: 'namespace',
              name: 'mcp__deploy',
              description: 'Deploys',
              tools: [{ type: 'function', name: 'deploy.run', description: 'Deploy', defer_loading: true, parameters: { type: 'object', properties: {} } }],
            },
          ],
        },
      ],
    } as never);
    expect(r.output_text).toBe('Deployed.');
    const sent = up.requests[0]!.body;
    expect(sent.messages.slice(1)).toEqual([
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_ns', type: 'function', function: { name: 'mcp__svc__task_list', arguments: '{}' } },
          { id: 'call_patch', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: patch }) } },
          { id: 'call_search', type: 'function', function: { name: 'tool_search', arguments: '{"query":"deploy"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_ns', content: '{"tasks":[]}' },
      { role: 'tool', tool_call_id: 'call_patch', content: 'Success.' },
      { role: 'tool', tool_call_id: 'call_search', content: 'Tools now available: mcp__deploy__deploy_run' },
    ]);
    // The loaded tool is offered from now on, under a name any upstream accepts, without Codex's own fields.
    expect(sent.tools.at(-1)).toEqual({ type: 'function', function: { name: 'mcp__deploy__deploy_run', description: 'Deploy', parameters: { type: 'object', properties: {} } } });
  });

  it('keeps every upstream name valid and distinct, and maps each back exactly, however the client named its tools', async () => {
    const long = 'x'.repeat(100);
    const tools = [
      {
        type: 'namespace',
        name: 'srv',
        tools: [
          { type: 'function', name: 'a.b' },
          { type: 'function', name: long },
        ],
      },
      { type: 'function', name: 'srv__a_b' }, // what srv's a.b cleans up to
      { type: 'namespace', name: 'srv__a', tools: [{ type: 'function', name: 'b' }] }, // srv__a + b joins to srv__a__b: not srv + a__b
      { type: 'namespace', name: 'srv', tools: [{ type: 'function', name: 'a__b' }] },
    ];
    up.script({ json: { choices: [{ index: 0, message: { role: 'assistant', content: null }, finish_reason: 'stop' }] } });
    await client().responses.create({ model: 'svc', agent: 'alice', input: 'list', tools } as never);
    const names: string[] = up.requests[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name);
    expect(names).toHaveLength(5);
    expect(new Set(names).size).toBe(5);
    for (const n of names) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(names[2]).toBe('srv__a_b');
    // The model calls each by the name it was given: every call comes back as what it stands for.
    up.script({ json: toolCallCompletion(names.map((name, i) => ({ id: `c${i}`, name, args: {} }))) });
    const r = await client().responses.create({ model: 'svc', agent: 'alice', input: 'call all', tools } as never);
    expect(r.output.map((o) => [(o as { name: string }).name, (o as { namespace?: string }).namespace ?? null])).toEqual([
      ['a.b', 'srv'],
      [long, 'srv'],
      ['srv__a_b', null],
      ['b', 'srv__a'],
      ['a__b', 'srv'],
    ]);
  });

  it('sends hosted tools to an upstream that speaks the Responses API, which runs them itself', async () => {
    up.script({
      json: {
        id: 'resp_up',
        object: 'response',
        created_at: 1,
        status: 'completed',
        model: 'r1',
        output: [{ type: 'message', id: 'm', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'found', annotations: [] }] }],
      },
    });
    const { data: r, response } = await client()
      .responses.create({ model: 'svc', agent: 'nat', input: 'search', tools: [weatherTool, { type: 'web_search', external_web_access: false }] } as never)
      .withResponse();
    expect(r.output_text).toBe('found');
    expect(response.headers.get('x-svc-tools-omitted')).toBeNull();
    expect(up.requests[0]!.body.tools).toEqual([
      { type: 'function', name: 'get_weather', description: 'The weather', parameters: weatherTool.parameters, strict: false },
      { type: 'web_search', external_web_access: false },
    ]);
  });
});

describe('one svc session per Codex thread (thread-id, session-id headers)', () => {
  it("keeps the thread's conversation as one session, started once, without sending its turns twice", async () => {
    const thread = '01a21ab8-850b-7b81-829b-b041fa9fcfd7';
    const headers = { authorization: `Bearer ${d.key}`, 'content-type': 'application/json', 'x-svc-agent': 'alice', 'session-id': thread, 'thread-id': thread };
    const before = await d.daemon.app.events.lastId();
    const turn1 = [{ role: 'user', content: 'first' }];
    up.script({ json: completion('one') }, { json: completion('two') });
    const a = await fetch(`${d.url}/v1/responses`, { method: 'POST', headers, body: JSON.stringify({ model: 'fake/m1', store: false, input: turn1 }) });
    expect(a.headers.get('x-session-id')).toBe(thread);
    const turn2 = [...turn1, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'one' }] }, { role: 'user', content: 'second' }];
    const b = await fetch(`${d.url}/v1/responses`, { method: 'POST', headers, body: JSON.stringify({ model: 'fake/m1', store: false, input: turn2 }) });
    expect(b.headers.get('x-session-id')).toBe(thread);
    // Codex sends the whole conversation each time: it goes upstream once, not after the stored copy.
    expect(up.requests[1]!.body.messages.slice(1).map((m: { content: string }) => m.content)).toEqual(['first', 'one', 'second']);
    const fired = await d.daemon.app.events.since(before, 100);
    expect(fired.filter((e) => e.name === 'session:started').map((e) => e.data.sessionId)).toEqual([thread]);
    expect(fired.filter((e) => e.name === 'completion:finished').map((e) => e.data.sessionId)).toEqual([thread, thread]);

    const bad = await fetch(`${d.url}/v1/responses`, { method: 'POST', headers: { ...headers, 'thread-id': 'not a valid id!' }, body: JSON.stringify({ input: 'x' }) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain('thread-id');
  });
});

// Last: it blocks the process (and the daemon in it) for its twenty thousand statements.
describe('stored responses', () => {
  it(`keeps the newest ${RESPONSES_KEPT}: saving one more drops the oldest`, async () => {
    const db = d.daemon.app.db;
    const now = new Date().toISOString();
    const save = async (i: number) => await saveResponse(db, { id: `resp_cap_${i}`, sessionId: 's', agent: null, model: 'fake/m1', messages: [{ role: 'user', content: `q${i}` }] }, [], now);
    await db.transaction(async () => {
      for (let i = 0; i < RESPONSES_KEPT; i++) await save(i);
    });
    expect((await getResponse(db, 'resp_cap_0'))?.messages).toEqual([{ role: 'user', content: 'q0' }]);
    await save(RESPONSES_KEPT);
    expect(await getResponse(db, 'resp_cap_0')).toBeNull();
    expect((await getResponse(db, 'resp_cap_1'))?.id).toBe('resp_cap_1');
    expect((await getResponse(db, `resp_cap_${RESPONSES_KEPT}`))?.id).toBe(`resp_cap_${RESPONSES_KEPT}`);
    // Twenty thousand statements: each a round trip to the bridge's thread on state-pg.
  }, 90_000);
});
