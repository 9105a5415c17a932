import { request } from 'undici';
import type { Provider } from '../providers/service.js';
import type { ChatCompletion, Usage } from './schema.js';

// One call to an OpenAI-compatible upstream. Only this file speaks to providers; it knows nothing
// of agents, sessions or events.

export class UpstreamError extends Error {
  constructor(
    readonly status: number | 'network',
    message: string,
    /** The upstream's own error code (insufficient_quota…), when it sent one. */
    readonly code: string | null = null,
  ) {
    super(message);
  }
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
    const text = (await res.body.text().catch(() => '')).slice(0, 4096);
    let message = text.trim().slice(0, 500) || `HTTP ${res.statusCode}`;
    let code: string | null = null;
    try {
      const parsed = JSON.parse(text) as { error?: { message?: unknown; code?: unknown; type?: unknown } | string };
      const e = parsed.error;
      if (typeof e === 'string') message = e;
      else if (e && typeof e.message === 'string') message = e.message.slice(0, 500);
      if (e && typeof e === 'object') code = typeof e.code === 'string' ? e.code : typeof e.type === 'string' ? e.type : null;
    } catch {
      // not JSON: keep the text
    }
    throw new UpstreamError(res.statusCode, message, code);
  }
  return res;
}

/** A plain (non-streamed) completion. */
export async function complete(provider: Provider, body: Record<string, unknown>, signal: AbortSignal): Promise<ChatCompletion> {
  const res = await send(provider, { ...body, stream: false }, signal);
  try {
    return (await res.body.json()) as ChatCompletion;
  } catch {
    throw new UpstreamError(502, `${provider.id} answered something that is not a chat completion`);
  }
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
