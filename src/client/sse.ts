import { request } from 'undici';
import { ApiError, UnreachableError, type SvcClient } from './client.js';

export interface SseMessage {
  id?: string;
  event: string;
  data: string;
}

/** An incremental parser of the text/event-stream format (WHATWG rules for fields and line ends). */
export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private event = '';
  private id: string | undefined;
  private pendingCR = false;

  constructor(
    private readonly onMessage: (m: SseMessage) => void,
    private readonly onComment: (text: string) => void = () => {},
  ) {}

  push(chunk: string): void {
    // A CR at the end of one chunk and an LF at the start of the next are one line end.
    if (this.pendingCR && chunk.startsWith('\n')) chunk = chunk.slice(1);
    this.pendingCR = chunk.endsWith('\r');
    this.buffer += chunk;
    const lines = this.buffer.split(/\r\n|\r|\n/);
    this.buffer = lines.pop()!;
    for (const line of lines) this.line(line);
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length) this.onMessage({ id: this.id, event: this.event || 'message', data: this.data.join('\n') });
      this.data = [];
      this.event = '';
      return;
    }
    if (line.startsWith(':')) {
      this.onComment(line.slice(1).trim());
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.id = value;
  }
}

export interface StreamOptions {
  filter?: string;
  lastEventId?: string;
  signal?: AbortSignal;
  onComment?: (text: string) => void;
}

/** Opens GET /v1/events and calls onMessage for each event until the stream ends or is aborted. */
export async function streamEvents(client: SvcClient, onMessage: (m: SseMessage) => void, opts: StreamOptions = {}): Promise<void> {
  const url = new URL(client.url + '/v1/events');
  if (opts.filter) url.searchParams.set('filter', opts.filter);
  const headers = client.headers({ accept: 'text/event-stream' });
  if (opts.lastEventId) headers['last-event-id'] = opts.lastEventId;
  let res;
  try {
    res = await request(url, { headers, signal: opts.signal, bodyTimeout: 0 });
  } catch (err) {
    if ((err as Error).name === 'AbortError') return;
    throw new UnreachableError(client.url, err);
  }
  if (res.statusCode !== 200) {
    const body = (await res.body.json().catch(() => ({}))) as { code?: string; error?: string };
    throw new ApiError(res.statusCode, body.code ?? 'unknown', body.error ?? `HTTP ${res.statusCode}`);
  }
  const parser = new SseParser(onMessage, opts.onComment);
  // A multi-byte character may be split across chunks; the streaming decoder holds its first bytes.
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) parser.push(decoder.decode(chunk, { stream: true }));
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
