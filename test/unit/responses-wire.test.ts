import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/kernel/errors.js';
import { fromResponse, ResponsesToChunks, toResponsesRequest } from '../../src/resources/chat/responses-upstream.js';
import { inputMessages, ResponseBuilder, responseSkeleton, toChatRequest } from '../../src/resources/chat/responses-wire.js';

// The two translations between chat completions and the Responses API, as pure functions.

describe('a chat body sent to a Responses upstream (toResponsesRequest)', () => {
  it.each([
    ['max_completion_tokens wins over max_tokens', { max_tokens: 5, max_completion_tokens: 9 }, { max_output_tokens: 9 }],
    ['a named tool_choice', { tool_choice: { type: 'function', function: { name: 'f' } } }, { tool_choice: { type: 'function', name: 'f' } }],
    [
      'a json_schema response_format',
      { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' }, strict: true } } },
      { text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' }, strict: true } } },
    ],
    ['json_object', { response_format: { type: 'json_object' } }, { text: { format: { type: 'json_object' } } }],
    ['reasoning_effort', { reasoning_effort: 'low' }, { reasoning: { effort: 'low' } }],
    ['an unknown field passes', { temperature: 0.2, seed: 4 }, { temperature: 0.2, seed: 4 }],
  ])('%s', (_name, extra, expected) => {
    const out = toResponsesRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra });
    expect(out).toMatchObject({ model: 'm', store: false, ...expected });
    expect(out).not.toHaveProperty('messages');
    expect(out).not.toHaveProperty('max_tokens');
  });

  it('turns images into input_image parts and tool turns into function_call items', () => {
    const out = toResponsesRequest({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'see' },
            { type: 'image_url', image_url: { url: 'data:x', detail: 'low' } },
          ],
        },
        { role: 'assistant', content: 'calling', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c', content: 'r' },
      ],
    });
    expect(out.input).toEqual([
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'see' },
          { type: 'input_image', image_url: 'data:x', detail: 'low' },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'calling', annotations: [] }] },
      { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c', output: 'r' },
    ]);
  });
});

describe('a Responses answer read back as chat (fromResponse, ResponsesToChunks)', () => {
  it.each([
    [
      'completed with text',
      {
        status: 'completed',
        output: [
          {
            type: 'message',
            content: [
              { type: 'output_text', text: 'a' },
              { type: 'output_text', text: 'b' },
            ],
          },
        ],
      },
      'stop',
      'ab',
    ],
    ['stopped at its length', { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [] }, 'length', ''],
    ['filtered', { status: 'incomplete', incomplete_details: { reason: 'content_filter' }, output: [] }, 'content_filter', ''],
    ['a function call', { status: 'completed', output: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }] }, 'tool_calls', null],
  ])('%s', (_name, response, finish, content) => {
    const c = fromResponse({ id: 'r', model: 'm', ...response }, 0);
    expect(c.choices[0]!.finish_reason).toBe(finish);
    expect(c.choices[0]!.message.content).toBe(content);
  });

  it('reports a failed response as its error', () => {
    expect(fromResponse({ status: 'failed', error: { code: 'server_error', message: 'x' } }, 0).error).toEqual({ code: 'server_error', message: 'x' });
    const t = new ResponsesToChunks(0);
    expect(t.push({ type: 'response.failed', response: { error: { message: 'down' } } })).toEqual([{ error: { message: 'down' } }]);
    expect(t.push({ type: 'error', code: 'rate_limit', message: 'slow' })).toEqual([{ error: { message: 'slow', code: 'rate_limit' } }]);
  });

  it('numbers two function calls 0 and 1 whatever their output index', () => {
    const t = new ResponsesToChunks(0);
    const calls = [
      ...t.push({ type: 'response.output_item.added', output_index: 3, item: { type: 'function_call', call_id: 'a', name: 'f' } }),
      ...t.push({ type: 'response.output_item.added', output_index: 5, item: { type: 'function_call', call_id: 'b', name: 'g' } }),
      ...t.push({ type: 'response.function_call_arguments.delta', output_index: 5, delta: '{}' }),
    ].map((c) => (c.choices as { delta: { tool_calls: { index: number }[] } }[])[0]!.delta.tool_calls[0]!.index);
    expect(calls).toEqual([0, 1, 1]);
  });
});

describe('a Responses request read as chat (inputMessages, toChatRequest)', () => {
  it.each([
    ['an item type svc cannot give a chat model', [{ type: 'item_reference', id: 'x' }], 'body.input[0].type'],
    ['a message without a role', [{ type: 'message', content: 'x' }], 'body.input[0].role'],
    ['a file part', [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }], 'body.input[0].content[0].type'],
    ['a function_call_output without its call', [{ type: 'function_call_output', output: 'x' }], 'body.input[0].call_id'],
  ])('refuses %s, naming the field', (_name, input, path) => {
    try {
      inputMessages(input as never);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(AppError);
      expect((e as AppError).details).toEqual([expect.objectContaining({ path })]);
    }
  });

  it('maps the settings chat models know', () => {
    expect(
      toChatRequest({ input: 'x', max_output_tokens: 10, tool_choice: { type: 'function', name: 'f' }, reasoning: { effort: 'high' }, text: { format: { type: 'json_object' } } } as never),
    ).toEqual({
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 10,
      tool_choice: { type: 'function', function: { name: 'f' } },
      reasoning_effort: 'high',
      response_format: { type: 'json_object' },
    });
  });
});

describe('ResponseBuilder', () => {
  it('closes the message before a tool call, and marks a response stopped at its length incomplete', () => {
    const events: string[] = [];
    const b = new ResponseBuilder(responseSkeleton({} as never, 'resp_1', 'p/m', 0), (type, data) => events.push(`${type}#${data.sequence_number}`));
    b.start();
    b.addText('a');
    b.addToolCall({ index: 0, id: 'c', function: { name: 'f', arguments: '{' } });
    b.addToolCall({ index: 0, function: { arguments: '}' } });
    const r = b.finish('length', { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
    expect(r.status).toBe('incomplete');
    expect(r.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(r.output.map((o) => o.type)).toEqual(['message', 'function_call']);
    expect(r.output[1]).toMatchObject({ arguments: '{}', status: 'completed' });
    expect(events.map((e) => e.split('#')[0])).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.incomplete',
    ]);
    expect(events.map((e) => Number(e.split('#')[1]))).toEqual(events.map((_, i) => i));
  });
});
