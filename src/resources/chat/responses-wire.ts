import { AppError } from '../../kernel/errors.js';
import { uuidv7 } from '../../lib/ids.js';
import type { InputItem, OutputItem, ResponseObject, ResponsesRequest, ResponseUsage } from './responses-schema.js';
import type { ChatMessage, ChatRequest, Usage } from './schema.js';
import { ToolMap, toolMapOf } from './responses-tools.js';
import { mergeToolCalls, type ToolCall } from './tool-calls.js';

// Serving the Responses API on top of chat: a request becomes the chat body svc runs (agent path
// or orchestrator), and what that says is built back into a Response, whole or as `response.*`
// events. Pure: no I/O but the `emit` callback.

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

function refuse(path: string, message: string): never {
  throw new AppError('invalid_request', message, { details: [{ path: `body.${path}`, message }] });
}

/** Text of a content given as a string or as parts (input_text, output_text, text…). */
function textOf(content: unknown, path: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  return (content as Json[])
    .map((p, i) => {
      if (typeof p.text === 'string') return p.text;
      if (p.type === 'refusal' && typeof p.refusal === 'string') return p.refusal;
      return refuse(`${path}[${i}].type`, `content part "${String(p.type)}" is not text; only user messages may carry images`);
    })
    .join('');
}

/** A user message's content: text stays text, images become chat image parts. */
function userContent(content: unknown, path: string): ChatMessage['content'] {
  if (!Array.isArray(content)) return textOf(content, path);
  const parts = (content as Json[]).map((p, i) => {
    if (typeof p.text === 'string') return { type: 'text', text: p.text };
    if (p.type === 'input_image' && typeof p.image_url === 'string') return { type: 'image_url', image_url: { url: p.image_url, ...(typeof p.detail === 'string' ? { detail: p.detail } : {}) } };
    return refuse(`${path}[${i}].type`, `content part "${String(p.type)}" cannot be sent to a chat model (text and input_image with image_url only)`);
  });
  return parts.every((p) => p.type === 'text') ? parts.map((p) => (p as { text: string }).text).join('') : parts;
}

/** An assistant turn's tool call: it joins the assistant message before it, as chat has them. */
function pushCall(out: ChatMessage[], call: ToolCall): void {
  const last = out[out.length - 1];
  if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
  else out.push({ role: 'assistant', content: null, tool_calls: [call] });
}

const call = (id: string, name: string, args: string): ToolCall => ({ id, type: 'function', function: { name, arguments: args } });

/**
 * The input items as chat messages. A tool call becomes the function the upstream knows it by
 * (`tools` flattened namespaces and custom tools); its output, a tool message.
 */
export function inputMessages(input: ResponsesRequest['input'], tools: ToolMap = new ToolMap()): ChatMessage[] {
  if (input === undefined) return [];
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const out: ChatMessage[] = [];
  input.forEach((item: InputItem, i) => {
    const at = `input[${i}]`;
    switch (item.type) {
      case undefined:
      case 'message': {
        const role = item.role ?? refuse(`${at}.role`, 'a message needs a role');
        out.push(role === 'user' ? { role, content: userContent(item.content, `${at}.content`) } : { role, content: textOf(item.content, `${at}.content`) });
        return;
      }
      case 'function_call':
        if (!item.call_id || !item.name) refuse(`${at}.call_id`, 'a function_call needs call_id and name');
        pushCall(out, call(item.call_id, tools.nameOf({ kind: 'function', name: item.name, ...(item.namespace ? { namespace: item.namespace } : {}) }), item.arguments ?? ''));
        return;
      case 'custom_tool_call':
        pushCall(out, call(item.call_id, tools.nameOf({ kind: 'custom', name: item.name, ...(item.namespace ? { namespace: item.namespace } : {}) }), JSON.stringify({ input: item.input ?? '' })));
        return;
      case 'tool_search_call':
        pushCall(out, call(item.call_id, tools.nameOf({ kind: 'tool_search' }), JSON.stringify(item.arguments ?? {})));
        return;
      case 'function_call_output':
      case 'custom_tool_call_output':
        if (!item.call_id) refuse(`${at}.call_id`, `a ${item.type} needs the call_id it answers`);
        out.push({ role: 'tool', tool_call_id: item.call_id, content: textOf(item.output, `${at}.output`) });
        return;
      case 'tool_search_output': {
        // The tools it loaded are offered from now on (toolMapOf); the model is told their names.
        if (!item.call_id) return; // a search the upstream ran itself: nothing was asked of the model
        const names = tools.namesFor(item.tools);
        out.push({ role: 'tool', tool_call_id: item.call_id, content: names.length ? `Tools now available: ${names.join(', ')}` : 'No tools matched.' });
        return;
      }
      case 'reasoning':
        return; // a reasoning model's own notes: no chat model can be given them back
      default:
        refuse(`${at}.type`, `input item type "${String((item as { type?: unknown }).type)}" is not supported`);
    }
  });
  return out;
}

/** The chat body a Responses request stands for (the conversation so far is added by planChat). */
export function toChatRequest(req: ResponsesRequest, tools: ToolMap = toolMapOf(req)): ChatRequest {
  if (req.background) refuse('background', 'background responses are not supported: svc answers while the request is open');
  const body: Json = { messages: inputMessages(req.input, tools) };
  if (req.model !== undefined) body.model = req.model;
  if (req.agent !== undefined) body.agent = req.agent;
  if (req.stream) body.stream = true;
  // Hosted tools are not here: serveResponse adds them for an upstream that can run them.
  if (tools.functions.length) body.tools = tools.functions;
  if (req.tool_choice !== undefined) {
    const choice = tools.toolChoice(req.tool_choice);
    if (choice !== undefined) body.tool_choice = choice;
  }
  if (req.max_output_tokens != null) body.max_tokens = req.max_output_tokens;
  if (req.temperature != null) body.temperature = req.temperature;
  if (req.top_p != null) body.top_p = req.top_p;
  if (req.parallel_tool_calls != null) body.parallel_tool_calls = req.parallel_tool_calls;
  if (req.reasoning?.effort) body.reasoning_effort = req.reasoning.effort;
  if (req.user !== undefined) body.user = req.user;
  const format = req.text?.format;
  if (format && format.type === 'json_schema')
    body.response_format = { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, ...(format.strict !== undefined ? { strict: format.strict } : {}) } };
  else if (format && format.type === 'json_object') body.response_format = { type: 'json_object' };
  return body as ChatRequest;
}

export function responseUsage(u: Usage | null): ResponseUsage | null {
  if (!u) return null;
  const details = u as Usage & { prompt_tokens_details?: { cached_tokens?: number }; completion_tokens_details?: { reasoning_tokens?: number } };
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: { cached_tokens: details.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: details.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: u.total_tokens,
  };
}

/** A Response's identity and the request's settings, echoed as OpenAI does. */
export function responseSkeleton(req: ResponsesRequest, id: string, model: string, createdAt: number): ResponseObject {
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    metadata: req.metadata ?? {},
    model,
    output: [],
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: req.previous_response_id ?? null,
    reasoning: { effort: req.reasoning?.effort ?? null, summary: null },
    store: req.store !== false,
    temperature: req.temperature ?? 1,
    text: req.text ?? { format: { type: 'text' } },
    tool_choice: req.tool_choice ?? 'auto',
    tools: req.tools ?? [],
    top_p: req.top_p ?? 1,
    truncation: 'disabled',
    usage: null,
    user: req.user ?? null,
  };
}

interface OpenText {
  index: number;
  item: OutputItem & { content: { type: 'output_text'; text: string; annotations: unknown[] }[] };
}
interface OpenCall {
  index: number;
  item: OutputItem & Json;
}

const ITEM_ID_PREFIX: Record<string, string> = { function_call: 'fc', custom_tool_call: 'ctc', tool_search_call: 'tsc' };

/**
 * Builds a Response from what the model says, in the order it says it: text opens a message item,
 * a tool-call fragment opens (or continues) a call item: function_call, or what `tools` says the
 * function stands for (a namespace's function, a custom_tool_call, a tool_search_call). With
 * `emit`, every step is also sent as the `response.*` event OpenAI sends for it, numbered, so the
 * openai package's stream accumulator rebuilds exactly the Response `finish` returns.
 */
export class ResponseBuilder {
  private readonly response: ResponseObject;
  private seq = 0;
  private text: OpenText | null = null;
  private readonly calls = new Map<number, OpenCall>();
  private readonly fragments: unknown[] = [];

  constructor(
    skeleton: ResponseObject,
    private readonly emit?: (type: string, data: Json) => void,
    private readonly tools: ToolMap = new ToolMap(),
  ) {
    this.response = skeleton;
  }

  private send(type: string, data: Json): void {
    this.emit?.(type, { type, sequence_number: this.seq++, ...data });
  }

  start(): void {
    this.send('response.created', { response: structuredClone(this.response) });
    this.send('response.in_progress', { response: structuredClone(this.response) });
  }

  addText(delta: string): void {
    if (!delta) return;
    if (!this.text) {
      this.closeCalls();
      const item = { id: `msg_${uuidv7()}`, type: 'message', status: 'in_progress', role: 'assistant', content: [] as OpenText['item']['content'] };
      this.text = { index: this.response.output.length, item };
      this.response.output.push(item);
      this.send('response.output_item.added', { output_index: this.text.index, item: structuredClone(item) });
      item.content.push({ type: 'output_text', text: '', annotations: [] });
      this.send('response.content_part.added', { item_id: item.id, output_index: this.text.index, content_index: 0, part: structuredClone(item.content[0]!) });
    }
    this.text.item.content[0]!.text += delta;
    this.send('response.output_text.delta', { item_id: this.text.item.id, output_index: this.text.index, content_index: 0, delta, logprobs: [] });
  }

  /** One streamed fragment of a tool call (chat's `delta.tool_calls[i]`), or a whole call. */
  addToolCall(fragment: unknown): void {
    if (!isObj(fragment)) return;
    const key = typeof fragment.index === 'number' ? fragment.index : this.calls.size;
    this.fragments.push({ ...fragment, index: key });
    const fn = isObj(fragment.function) ? fragment.function : {};
    let open = this.calls.get(key);
    if (!open) {
      this.closeText();
      const shown = this.tools.callItem(typeof fn.name === 'string' ? fn.name : '', typeof fragment.id === 'string' ? fragment.id : '', '');
      const item = { id: `${ITEM_ID_PREFIX[String(shown.type)] ?? 'fc'}_${uuidv7()}`, status: 'in_progress', ...shown } as OpenCall['item'];
      open = { index: this.response.output.length, item };
      this.calls.set(key, open);
      this.response.output.push(item);
      this.send('response.output_item.added', { output_index: open.index, item: structuredClone(item) });
    }
    // Only a function's arguments stream as they come: a custom tool's input is inside JSON until it is whole.
    if (open.item.type === 'function_call' && typeof fn.arguments === 'string' && fn.arguments) {
      this.send('response.function_call_arguments.delta', { item_id: open.item.id, output_index: open.index, delta: fn.arguments });
    }
  }

  private closeText(): void {
    if (!this.text) return;
    const { index, item } = this.text;
    const part = item.content[0]!;
    this.send('response.output_text.done', { item_id: item.id, output_index: index, content_index: 0, text: part.text, logprobs: [] });
    this.send('response.content_part.done', { item_id: item.id, output_index: index, content_index: 0, part: structuredClone(part) });
    item.status = 'completed';
    this.send('response.output_item.done', { output_index: index, item: structuredClone(item) });
    this.text = null;
  }

  private closeCalls(): void {
    // The calls as the one merge of streamed fragments (tool-calls.ts) puts them together.
    const merged = mergeToolCalls(this.fragments);
    [...this.calls.keys()]
      .sort((a, b) => a - b)
      .forEach((key, i) => {
        const { index, item } = this.calls.get(key)!;
        if (item.status === 'completed') return;
        const call = merged[i]!;
        // The whole call decides what it is (a name may come after the first fragment): the item is rewritten in place.
        const whole = this.tools.callItem(call.function.name, call.id, call.function.arguments);
        for (const k of Object.keys(item)) if (k !== 'id') delete (item as Json)[k];
        Object.assign(item, whole, { status: 'completed' });
        if (item.type === 'function_call') this.send('response.function_call_arguments.done', { item_id: item.id, output_index: index, name: item.name, arguments: item.arguments });
        else if (item.type === 'custom_tool_call') this.send('response.custom_tool_call_input.done', { item_id: item.id, output_index: index, input: item.input });
        this.send('response.output_item.done', { output_index: index, item: structuredClone(item) });
      });
  }

  /** Ends the response: completed, or incomplete when the model stopped at its length or a filter. */
  finish(finishReason: string | null, usage: Usage | null): ResponseObject {
    this.closeText();
    this.closeCalls();
    const incomplete = finishReason === 'length' ? 'max_output_tokens' : finishReason === 'content_filter' ? 'content_filter' : null;
    this.response.status = incomplete ? 'incomplete' : 'completed';
    this.response.incomplete_details = incomplete ? { reason: incomplete } : null;
    this.response.usage = responseUsage(usage);
    this.send(incomplete ? 'response.incomplete' : 'response.completed', { response: structuredClone(this.response) });
    return this.response;
  }

  /** Ends the response as failed (after the stream's headers went out). */
  fail(code: string, message: string): void {
    this.response.status = 'failed';
    this.response.error = { code, message };
    this.send('response.failed', { response: structuredClone(this.response) });
  }
}
