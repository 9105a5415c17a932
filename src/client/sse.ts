import { Agent, request } from 'undici';
import { sseReader, type SseMessage } from '../lib/sse-read.js';
import { ApiError, UnreachableError, type SvcClient } from './client.js';

export type { SseMessage } from '../lib/sse-read.js';

export interface StreamOptions {
  filter?: string;
  lastEventId?: string;
  signal?: AbortSignal;
  onComment?: (text: string) => void;
  /** The stream is open: every event committed from now on will come (read what came before, then follow). */
  onOpen?: () => void;
}

/** Opens GET /v1/events and calls onMessage for each event until the stream ends or is aborted. */
export async function streamEvents(client: SvcClient, onMessage: (m: SseMessage) => void, opts: StreamOptions = {}): Promise<void> {
  const url = new URL(client.url + '/v1/events');
  if (opts.filter) url.searchParams.set('filter', opts.filter);
  const headers = client.headers({ accept: 'text/event-stream' });
  if (opts.lastEventId) headers['last-event-id'] = opts.lastEventId;
  let res;
  try {
    // A daemon serving its own certificate (server.tls) is trusted as SvcClient trusts it.
    const dispatcher = url.protocol === 'https:' && client.tls ? new Agent({ connect: client.tls as Agent.Options['connect'] }) : undefined;
    res = await request(url, { headers, signal: opts.signal, bodyTimeout: 0, ...(dispatcher ? { dispatcher } : {}) });
  } catch (err) {
    if ((err as Error).name === 'AbortError') return;
    throw new UnreachableError(client.url, err);
  }
  if (res.statusCode !== 200) {
    const body = (await res.body.json().catch(() => ({}))) as { code?: string; error?: string };
    throw new ApiError(res.statusCode, body.code ?? 'unknown', body.error ?? `HTTP ${res.statusCode}`);
  }
  opts.onOpen?.();
  const reader = sseReader(onMessage, { onComment: opts.onComment });
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) reader.push(chunk);
  } catch (err) {
    if (!isStreamEnd(err, opts.signal)) throw err;
    // Aborted, or the daemon went away mid-stream: the caller decides whether to reconnect.
  }
}

function isStreamEnd(err: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted) return true;
  const e = err as NodeJS.ErrnoException;
  return e.name === 'AbortError' || e.code === 'ECONNRESET' || e.code === 'UND_ERR_SOCKET' || e.code === 'UND_ERR_ABORTED';
}
