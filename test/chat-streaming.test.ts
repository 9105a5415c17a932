import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { svcAgainst } from './cli-helpers.js';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

// Streams as networks deliver them: characters cut between two reads, tool calls in fragments.

const TEXT = 'héllo 🌍 wörld — 日本語';

let up: FakeUpstream;
let d: TestDaemon;

beforeAll(async () => {
  up = await startFakeUpstream();
  d = await startTestDaemon({ config: { providers: { fake: { baseUrl: up.url, apiKey: 'sk-stream-test-key-0123', models: ['m1'] } } } });
  await d.api('POST', '/api/v1/agents', { body: { name: 'alice', model: 'fake/m1' } });
});
afterAll(async () => {
  await d.close();
  await up.close();
});
afterEach(() => {
  up.requests.length = 0;
});

const client = () => new OpenAI({ baseURL: `${d.url}/v1`, apiKey: d.key, maxRetries: 0 });
const frame = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;
const textChunk = (content: string) => ({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta: { content }, finish_reason: null }] });

/** The stream's bytes cut at `at` (a byte inside a multi-byte character), written in two pieces. */
function cutAt(at: number): Buffer[] {
  const bytes = Buffer.from(frame(textChunk(TEXT)) + frame({ ...textChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) + 'data: [DONE]\n\n');
  return [bytes.subarray(0, at), bytes.subarray(at)];
}

/** Every byte offset of the frame that falls inside a multi-byte character. */
function cutsInsideCharacters(): number[] {
  const bytes = Buffer.from(frame(textChunk(TEXT)));
  const out: number[] = [];
  for (let i = 1; i < bytes.length; i++) if ((bytes[i]! & 0xc0) === 0x80) out.push(i);
  return out;
}

describe('multi-byte text cut between two network reads', () => {
  it('reaches the openai client whole, through the daemon, whatever byte of a character it is cut at', async () => {
    const cuts = cutsInsideCharacters();
    expect(cuts.length).toBeGreaterThan(10);
    for (const at of cuts) {
      up.script({ raw: cutAt(at) });
      const stream = await client().chat.completions.create({ model: 'fake/m1', messages: [{ role: 'user', content: 'hi' }], stream: true, agent: 'alice' } as never);
      let text = '';
      for await (const c of stream as unknown as AsyncIterable<{ choices: { delta: { content?: string } }[] }>) text += c.choices[0]?.delta.content ?? '';
      expect(text, `cut at byte ${at}`).toBe(TEXT);
    }
    // And the session kept it whole too.
    const kept = (await d.daemon.app.db.prepare('SELECT messages FROM chat_sessions ORDER BY updated_at DESC LIMIT 1').get()) as { messages: string };
    expect(JSON.parse(kept.messages).at(-1).content).toBe(TEXT);
  });

  it('reaches `svc chat` whole (the CLI reads the stream with the same reader)', async () => {
    const bare = { url: up.url.replace(/\/v1$/, ''), key: 'unused-key-0123456789' };
    for (const at of cutsInsideCharacters().slice(0, 6)) {
      up.script({ raw: cutAt(at) });
      const r = await svcAgainst(bare, ['chat', 'hi']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout, `cut at byte ${at}`).toBe(`${TEXT}\n`);
    }
  });
});

describe('a streamed tool call', () => {
  it('is kept whole in the session, and the next turn sends one merged call upstream', async () => {
    const fragment = (tool_calls: unknown[], finish: string | null = null) => ({
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm1',
      choices: [{ index: 0, delta: { tool_calls }, finish_reason: finish }],
    });
    up.script({
      stream: [
        fragment([{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }]),
        fragment([{ index: 0, function: { arguments: '{"city":' } }]),
        fragment([{ index: 0, function: { arguments: '"Zürich"}' } }]),
        { ...fragment([]), choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      ],
    });
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const first = await client()
      .chat.completions.create({ model: 'fake/m1', messages: [{ role: 'user', content: 'weather?' }], tools, stream: true, agent: 'alice' } as never)
      .withResponse();
    const calls: unknown[] = [];
    for await (const c of first.data as unknown as AsyncIterable<{ choices: { delta: { tool_calls?: unknown[] } }[] }>) calls.push(...(c.choices[0]?.delta.tool_calls ?? []));
    expect(calls).toHaveLength(3); // the client gets the fragments as they came, as from OpenAI
    const session = first.response.headers.get('x-session-id')!;

    up.script({ stream: [textChunk('Sunny.')] });
    const second = await client().chat.completions.create(
      { model: 'fake/m1', messages: [{ role: 'tool', tool_call_id: 'call_1', content: '{"sky":"clear"}' }], stream: true, agent: 'alice' } as never,
      { headers: { 'x-session-id': session } },
    );
    for await (const _ of second as unknown as AsyncIterable<unknown>) void _;
    const sent = up.requests[1]!.body.messages;
    const assistant = sent.find((m: { role: string }) => m.role === 'assistant');
    expect(assistant.tool_calls).toEqual([{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Zürich"}' } }]);
    expect(sent.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '{"sky":"clear"}' });
  });
});
