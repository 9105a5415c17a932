import { redact } from '../../lib/redact.js';
import { readSse, SseOverflowError } from '../../lib/sse-read.js';
import type { Provider } from '../providers/service.js';
import { fromResponse, ResponsesToChunks, toResponsesRequest } from './responses-upstream.js';
import type { ChatCompletion, Usage } from './schema.js';
import { mergeToolCalls, type ToolCall } from './tool-calls.js';

// One call to an OpenAI-compatible upstream. Only this file speaks to providers; it knows nothing
// of agents, sessions or events. Whatever wire the provider speaks (chat completions, or the
// Responses API translated by responses-upstream.ts), callers send a chat body and get chat
// completions and chunks back.

/** An upstream's message is cut to this length once it is scrubbed (a whole secret is needed to find it). */
const MESSAGE_MAX = 500;
/** An upstream's error code is a word (insufficient_quota); it is kept as the provider's last reason. */
const CODE_MAX = 100;

/**
 * A failed upstream call. `message` and `code` are the upstream's own text, which may echo what it
 * was sent (a 401 quotes the key): use `scrubbed()` before they go anywhere.
 */
export class UpstreamError extends Error {
  constructor(
    readonly status: number | 'network',
    message: string,
    /** The upstream's own error code (insufficient_quota…), when it sent one. */
    readonly code: string | null = null,
    /** How long the upstream asked to be left alone (its Retry-After), when it said. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }

  /** The same failure with every secret taken out of its text, and the message cut to size. */
  scrubbed(secrets: readonly string[]): UpstreamError {
    return new UpstreamError(this.status, redact(this.message, secrets).slice(0, MESSAGE_MAX), this.code === null ? null : redact(this.code, secrets).slice(0, CODE_MAX), this.retryAfterMs);
  }

  withRetryAfter(ms: number | null): UpstreamError {
    return ms === null ? this : new UpstreamError(this.status, this.message, this.code, ms);
  }
}

/**
 * An error answer's wait: `retry-after-ms` (OpenAI's) or `retry-after` in seconds. An HTTP date is
 * not read: it would be compared with a clock the upstream does not share.
 */
function retryAfterOf(headers: Record<string, string | string[] | undefined>): number | null {
  const one = (name: string) => {
    const v = headers[name];
    return typeof v === 'string' ? v.trim() : undefined;
  };
  const ms = one('retry-after-ms');
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms));
  const s = one('retry-after');
  if (s && /^\d+$/.test(s)) return Number(s) * 1000;
  return null;
}

/** An upstream failure from an OpenAI-shaped `error` (an object, or a bare string). */
function errorFrom(e: unknown, status: number, fallback: string): UpstreamError {
  if (typeof e === 'string') return new UpstreamError(status, e || fallback);
  const o = (e && typeof e === 'object' ? e : {}) as { message?: unknown; code?: unknown; type?: unknown };
  const code = typeof o.code === 'string' ? o.code : typeof o.type === 'string' ? o.type : null;
  return new UpstreamError(status, typeof o.message === 'string' && o.message ? o.message : fallback, code);
}

/**
 * An error sent inside a 200 answer (a chunk of a stream that failed after its headers, as
 * OpenRouter does, or a body): its numeric code when it names an HTTP error, else 502.
 */
function inlineError(e: unknown): UpstreamError {
  const n = e && typeof e === 'object' ? (e as { code?: unknown }).code : undefined;
  const status = typeof n === 'number' && Number.isInteger(n) && n >= 400 && n <= 599 ? n : 502;
  return errorFrom(e, status, 'the upstream reported an error');
}

export interface StreamResult {
  content: string;
  /** Whole calls: the stream's fragments merged. */
  toolCalls: ToolCall[];
  finishReason: string | null;
  usage: Usage | null;
}

async function send(provider: Provider, chatBody: Record<string, unknown>, signal: AbortSignal) {
  const responsesApi = provider.api === 'responses';
  const body = responsesApi ? toResponsesRequest(chatBody) : chatBody;
  const headers: Record<string, string> = { ...provider.headers, 'content-type': 'application/json', accept: body.stream ? 'text/event-stream' : 'application/json' };
  if (provider.key) headers.authorization = `Bearer ${provider.key}`;
  // undici comes with the first chat call, not with the daemon: a daemon nobody chats through never loads it (~20 MB).
  const { request } = await import('undici');
  let res;
  try {
    // undici's request() never follows a redirect: a 3xx is an upstream failure like any non-2xx.
    res = await request(`${provider.baseUrl}${responsesApi ? '/responses' : '/chat/completions'}`, { method: 'POST', headers, body: JSON.stringify(body), signal });
  } catch (err) {
    if (signal.aborted) throw err;
    throw new UpstreamError('network', `cannot reach ${provider.id} at ${new URL(provider.baseUrl).host}: ${(err as Error).message}`);
  }
  if (res.statusCode < 200 || res.statusCode >= 300) {
    // Not cut to MESSAGE_MAX yet: a secret cut in two could no longer be found by scrubbed().
    const text = (await res.body.text().catch(() => '')).slice(0, 4096);
    const fallback = text.trim() || `HTTP ${res.statusCode}`;
    let parsed: { error?: unknown } | null = null;
    try {
      parsed = JSON.parse(text) as { error?: unknown };
    } catch {
      // not JSON: keep the text
    }
    const failure = parsed && typeof parsed === 'object' && parsed.error !== undefined ? errorFrom(parsed.error, res.statusCode, fallback) : new UpstreamError(res.statusCode, fallback);
    throw failure.withRetryAfter(retryAfterOf(res.headers));
  }
  return res;
}

/** A plain (non-streamed) completion; `created` (Unix seconds) is the answer's when the upstream gives none. */
export async function complete(provider: Provider, body: Record<string, unknown>, signal: AbortSignal, created: number): Promise<ChatCompletion> {
  const res = await send(provider, { ...body, stream: false }, signal);
  let answer: ChatCompletion & { error?: unknown };
  try {
    const parsed = (await res.body.json()) as Record<string, unknown>;
    answer = (provider.api === 'responses' && parsed && typeof parsed === 'object' && !parsed.error ? fromResponse(parsed, created) : parsed) as ChatCompletion & { error?: unknown };
  } catch {
    throw new UpstreamError(502, `${provider.id} answered something that is not a ${provider.api === 'responses' ? 'response' : 'chat completion'}`);
  }
  if (answer && typeof answer === 'object' && answer.error !== undefined && answer.error !== null) throw inlineError(answer.error);
  return answer;
}

/**
 * A streamed completion: every upstream chunk is handed to `onChunk` as parsed JSON as soon as it
 * arrives; what the stream said is summed up for the session and the completion event.
 */
export async function stream(provider: Provider, body: Record<string, unknown>, signal: AbortSignal, created: number, onChunk: (chunk: Record<string, unknown>) => void): Promise<StreamResult> {
  const res = await send(provider, { ...body, stream: true }, signal);
  const out = { content: '', fragments: [] as unknown[], finishReason: null as string | null, usage: null as Usage | null };
  const fromResponses = provider.api === 'responses' ? new ResponsesToChunks(created) : null;
  const handle = (chunk: Record<string, unknown>) => {
    // A failure after the headers: never forwarded as a chunk, it ends the call like any other.
    if (chunk.error !== undefined && chunk.error !== null) throw inlineError(chunk.error);
    const choice = (chunk.choices as { delta?: { content?: unknown; tool_calls?: unknown[] }; finish_reason?: unknown }[] | undefined)?.[0];
    if (typeof choice?.delta?.content === 'string') out.content += choice.delta.content;
    if (Array.isArray(choice?.delta?.tool_calls)) out.fragments.push(...choice.delta.tool_calls);
    if (typeof choice?.finish_reason === 'string') out.finishReason = choice.finish_reason;
    if (chunk.usage && typeof chunk.usage === 'object') out.usage = chunk.usage as Usage;
    onChunk(chunk);
  };
  try {
    await readSse(res.body, ({ data }) => {
      if (!data || data === '[DONE]') return;
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(data) as Record<string, unknown>;
      } catch {
        return; // a malformed chunk is dropped, not forwarded
      }
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return; // nor is one that is not an object
      if (fromResponses) for (const c of fromResponses.push(parsed)) handle(c);
      else handle(parsed);
    });
  } catch (err) {
    if (err instanceof SseOverflowError) throw new UpstreamError(502, 'the upstream stream sent an oversized line');
    throw err;
  }
  return { content: out.content, toolCalls: mergeToolCalls(out.fragments), finishReason: out.finishReason, usage: out.usage };
}
