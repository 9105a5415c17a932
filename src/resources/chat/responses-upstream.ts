import type { ChatCompletion, ChatMessage, Usage } from './schema.js';

// Calling an upstream that speaks the OpenAI Responses API (`providers.<id>.api: "responses"`).
// Inside svc a call is always a chat-completions body and answers chat completions and chunks: this
// file translates the body out and the answer (or each streamed event) back, so sessions, the
// orchestrator's loop and both client-facing wires stay one code path. Pure: no I/O.

type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/** A chat message's content as text: string content, or its text parts joined. */
export function contentText(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p) => (p as { text?: unknown }).text)
    .map((t) => (typeof t === 'string' ? t : ''))
    .join('');
}

function userParts(content: ChatMessage['content']): unknown {
  if (!Array.isArray(content)) return content ?? '';
  return content.map((p) => {
    const part = p as Json;
    if (part.type === 'text') return { type: 'input_text', text: part.text };
    if (part.type === 'image_url') {
      const img = part.image_url as { url?: unknown; detail?: unknown } | string | undefined;
      const url = typeof img === 'string' ? img : img?.url;
      return { type: 'input_image', image_url: url, detail: (isObj(img) && img.detail) || 'auto' };
    }
    return part; // already a Responses part, or one the upstream judges
  });
}

/** The chat body svc built, as a Responses request. Fields it does not translate pass unchanged. */
export function toResponsesRequest(body: Json): Json {
  const { messages, tools, tool_choice, max_tokens, max_completion_tokens, response_format, stream_options, reasoning_effort, ...rest } = body;
  const input: unknown[] = [];
  for (const m of (messages as ChatMessage[] | undefined) ?? []) {
    if (m.role === 'tool') {
      input.push({ type: 'function_call_output', call_id: m.tool_call_id ?? '', output: contentText(m.content) });
    } else if (m.role === 'assistant') {
      const text = contentText(m.content);
      if (text) input.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] });
      for (const c of m.tool_calls ?? []) input.push({ type: 'function_call', call_id: c.id, name: c.function.name, arguments: c.function.arguments });
    } else {
      input.push({ type: 'message', role: m.role, content: m.role === 'user' ? userParts(m.content) : contentText(m.content) });
    }
  }
  const out: Json = { ...rest, input, store: false };
  if (Array.isArray(tools)) {
    out.tools = tools.map((t) => {
      const fn = isObj(t) && t.type === 'function' && isObj(t.function) ? t.function : null;
      return fn ? { type: 'function', name: fn.name, description: fn.description, parameters: fn.parameters, ...(fn.strict !== undefined ? { strict: fn.strict } : {}) } : t;
    });
  }
  if (tool_choice !== undefined) out.tool_choice = isObj(tool_choice) && isObj(tool_choice.function) ? { type: 'function', name: tool_choice.function.name } : tool_choice;
  const max = max_completion_tokens ?? max_tokens;
  if (max !== undefined) out.max_output_tokens = max;
  if (reasoning_effort !== undefined) out.reasoning = { ...(isObj(rest.reasoning) ? rest.reasoning : {}), effort: reasoning_effort };
  if (isObj(response_format)) {
    const f = response_format;
    if (f.type === 'json_schema' && isObj(f.json_schema)) out.text = { format: { type: 'json_schema', ...f.json_schema } };
    else if (f.type === 'json_object') out.text = { format: { type: 'json_object' } };
  }
  return out;
}

/** A Responses usage as chat-completions usage. */
export function chatUsage(u: unknown): Usage | null {
  if (!isObj(u)) return null;
  const prompt = Number(u.input_tokens) || 0;
  const completion = Number(u.output_tokens) || 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: Number(u.total_tokens) || prompt + completion };
}

function finishReasonOf(response: Json, hasCalls: boolean): string {
  if (response.status === 'incomplete') {
    const reason = isObj(response.incomplete_details) ? response.incomplete_details.reason : null;
    return reason === 'content_filter' ? 'content_filter' : 'length';
  }
  return hasCalls ? 'tool_calls' : 'stop';
}

/**
 * A whole Response as the chat completion svc works with; its failure, when it failed, as `error`.
 * `created` (Unix seconds, the daemon's clock) stands in for a created_at the upstream left out.
 */
export function fromResponse(response: Json, created: number): ChatCompletion & { error?: unknown } {
  if (response.status === 'failed' || (isObj(response.error) && response.error.message)) {
    return { error: response.error ?? { message: 'the upstream reported a failed response' } } as ChatCompletion & { error: unknown };
  }
  let text = '';
  const calls: NonNullable<ChatMessage['tool_calls']> = [];
  for (const item of Array.isArray(response.output) ? response.output : []) {
    if (!isObj(item)) continue;
    if (item.type === 'message' && Array.isArray(item.content)) {
      for (const p of item.content) if (isObj(p) && p.type === 'output_text' && typeof p.text === 'string') text += p.text;
    } else if (item.type === 'function_call') {
      calls.push({ id: String(item.call_id ?? item.id ?? ''), type: 'function', function: { name: String(item.name ?? ''), arguments: String(item.arguments ?? '') } });
    }
  }
  const usage = chatUsage(response.usage);
  return {
    id: String(response.id ?? 'resp'),
    object: 'chat.completion',
    created: Number(response.created_at) || created,
    model: String(response.model ?? ''),
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text || (calls.length ? null : ''), ...(calls.length ? { tool_calls: calls } : {}) },
        finish_reason: finishReasonOf(response, calls.length > 0),
      },
    ],
    ...(usage ? { usage } : {}),
  };
}

/**
 * A Responses event stream as chat chunks: text deltas become content deltas, each function call
 * a tool-call fragment with its own index, the terminal event a finish chunk and a usage chunk.
 * A `response.failed` or `error` event is returned as `{error}` for the caller to end the call.
 */
export class ResponsesToChunks {
  private readonly callIndex = new Map<number, number>();
  private calls = 0;
  private id = 'resp';
  private model = '';

  /** `created`: Unix seconds on the daemon's clock, until the upstream's response.created says its own. */
  constructor(private created: number) {}

  private chunk(delta: Json, finish: string | null = null): Json {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [{ index: 0, delta, finish_reason: finish }] };
  }

  /** The chunks one event stands for (often none). */
  push(event: Json): Json[] {
    const response = isObj(event.response) ? event.response : null;
    switch (event.type) {
      case 'response.created':
        if (response) {
          this.id = String(response.id ?? this.id);
          this.created = Number(response.created_at) || this.created;
          this.model = String(response.model ?? '');
        }
        return [this.chunk({ role: 'assistant', content: '' })];
      case 'response.output_text.delta':
        return typeof event.delta === 'string' && event.delta ? [this.chunk({ content: event.delta })] : [];
      case 'response.output_item.added': {
        const item = isObj(event.item) ? event.item : null;
        if (item?.type !== 'function_call') return [];
        const index = this.calls++;
        this.callIndex.set(Number(event.output_index), index);
        // Arguments that came whole with the item are sent as its first piece.
        return [
          this.chunk({
            tool_calls: [
              { index, id: String(item.call_id ?? item.id ?? ''), type: 'function', function: { name: String(item.name ?? ''), arguments: typeof item.arguments === 'string' ? item.arguments : '' } },
            ],
          }),
        ];
      }
      case 'response.function_call_arguments.delta': {
        const index = this.callIndex.get(Number(event.output_index));
        return index === undefined || typeof event.delta !== 'string' ? [] : [this.chunk({ tool_calls: [{ index, function: { arguments: event.delta } }] })];
      }
      case 'response.completed':
      case 'response.incomplete': {
        const usage = chatUsage(response?.usage);
        const finish = this.chunk({}, finishReasonOf(response ?? { status: 'completed' }, this.calls > 0));
        return usage ? [finish, { ...this.chunk({}), choices: [], usage }] : [finish];
      }
      case 'response.failed':
        return [{ error: response?.error || { message: 'the upstream reported a failed response' } }];
      case 'error':
        return [{ error: { message: event.message, code: event.code } }];
      default:
        return [];
    }
  }
}
