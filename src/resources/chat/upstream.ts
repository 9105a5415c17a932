import { request } from 'undici';
import { redact } from '../../lib/redact.js';
import type { Provider } from '../providers/service.js';
import type { ChatCompletion, Usage } from './schema.js';

// One call to an OpenAI-compatible upstream. Only this file speaks to providers; it knows nothing
// of agents, sessions or events.

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
  ) {
    super(message);
  }

  /** The same failure with every secret taken out of its text, and the message cut to size. */
  scrubbed(secrets: readonly string[]): UpstreamError {
    return new UpstreamError(this.status, redact(this.message, secrets).slice(0, MESSAGE_MAX), this.code === null ? null : redact(this.code, secrets).slice(0, CODE_MAX));
  }
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
  toolCalls: unknown[];
  finishReason: string | null;
  usage: Usage | null;
}

async function send(provider: Provider, body: Record<string, unknown>, signal: AbortSignal) {
  const headers: Record<string, string> = { ...provider.headers, 'content-type': 'application/json', accept: body.stream ? 'text/event-stream' : 'application/json' };
  if (provider.key) headers.authorization = `Bearer ${provider.key}`;
  let res;
  try {
    // undici's request() never follows a redirect: a 3xx is an upstream failure like any non-2xx.
    res = await request(`${provider.baseUrl}/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body), signal });
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
    throw parsed && typeof parsed === 'object' && parsed.error !== undefined ? errorFrom(parsed.error, res.statusCode, fallback) : new UpstreamError(res.statusCode, fallback);
  }
  return res;
}

/** A plain (non-streamed) completion. */
export async function complete(provider: Provider, body: Record<string, unknown>, signal: AbortSignal): Promise<ChatCompletion> {
  const res = await send(provider, { ...body, stream: false }, signal);
  let answer: ChatCompletion & { error?: unknown };
  try {
    answer = (await res.body.json()) as ChatCompletion & { error?: unknown };
  } catch {
    throw new UpstreamError(502, `${provider.id} answered something that is not a chat completion`);
  }
  if (answer && typeof answer === 'object' && answer.error !== undefined && answer.error !== null) throw inlineError(answer.error);
  return answer;
}

/**
 * A streamed completion: every upstream chunk is handed to `onChunk` as parsed JSON as soon as it
 * arrives; what the stream said is summed up for the session and the completion event.
 */
export async function stream(provider: Provider, body: Record<string, unknown>, signal: AbortSignal, onChunk: (chunk: Record<string, unknown>) => void): Promise<StreamResult> {
  const res = await send(provider, { ...body, stream: true }, signal);
  const out: StreamResult = { content: '', toolCalls: [], finishReason: null, usage: null };
  let buffered = '';
  const handleLine = (line: string) => {
    if (!line.startsWith('data:')) return;
    const payload = line.slice(5).trim();
    if (!payload || payload === '[DONE]') return;
    let chunk: Record<string, unknown>;
    try {
      chunk = JSON.parse(payload) as Record<string, unknown>;
    } catch {
      return; // a malformed chunk is dropped, not forwarded
    }
    if (!chunk || typeof chunk !== 'object') return; // nor is one that is not an object
    // A failure after the headers: never forwarded as a chunk, it ends the call like any other.
    if (chunk.error !== undefined && chunk.error !== null) throw inlineError(chunk.error);
    const choice = (chunk.choices as { delta?: { content?: unknown; tool_calls?: unknown[] }; finish_reason?: unknown }[] | undefined)?.[0];
    if (typeof choice?.delta?.content === 'string') out.content += choice.delta.content;
    if (Array.isArray(choice?.delta?.tool_calls)) out.toolCalls.push(...choice.delta.tool_calls);
    if (typeof choice?.finish_reason === 'string') out.finishReason = choice.finish_reason;
    if (chunk.usage && typeof chunk.usage === 'object') out.usage = chunk.usage as Usage;
    onChunk(chunk);
  };
  for await (const piece of res.body) {
    buffered += (piece as Buffer).toString('utf8');
    // Bounded: a line longer than 4 MiB is not an SSE chunk any upstream sends.
    if (buffered.length > 4 * 1024 * 1024) throw new UpstreamError(502, 'the upstream stream sent an oversized line');
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      handleLine(buffered.slice(0, nl).replace(/\r$/, ''));
      buffered = buffered.slice(nl + 1);
    }
  }
  if (buffered) handleLine(buffered);
  return out;
}
