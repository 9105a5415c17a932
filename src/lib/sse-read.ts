import { createParser } from 'eventsource-parser';

// The one reader of text/event-stream bytes in svc: the events client (`svc events tail`, the
// CLI's waits), the chat upstream and `svc chat` all read through it, so a character split across
// two network chunks, a CR at the end of one chunk and an LF at the start of the next, or an
// absurdly long line are handled once, the same way, everywhere.

/** One message of a stream; `event` is "message" when the server named none, as in browsers. */
export interface SseMessage {
  id?: string;
  event: string;
  data: string;
}

/** Buffered characters at most (an unfinished line or event): nothing real comes near 4 Mi. */
export const SSE_MAX_BUFFER = 4 * 1024 * 1024;

/** The stream sent more than SSE_MAX_BUFFER characters without ending a message. */
export class SseOverflowError extends Error {
  constructor() {
    super('the event stream sent an oversized message');
  }
}

export interface SseReader {
  /** Feeds bytes (decoded with the bytes held from the last call) or already decoded text. */
  push(chunk: Uint8Array | string): void;
}

export function sseReader(onMessage: (m: SseMessage) => void, opts: { onComment?: (text: string) => void; maxBuffer?: number } = {}): SseReader {
  let overflow = false;
  // The last event id is sticky, as in browsers: a message without `id:` keeps the one before it.
  let lastId: string | undefined;
  const parser = createParser({
    onEvent: (e) => {
      if (e.id !== undefined) lastId = e.id;
      onMessage({ ...(lastId !== undefined ? { id: lastId } : {}), event: e.event || 'message', data: e.data });
    },
    onComment: opts.onComment ? (c) => opts.onComment!(c.trim()) : undefined,
    onError: (e) => {
      if (e.type === 'max-buffer-size-exceeded') overflow = true;
      // unknown fields and bad retry values are ignored, as the standard says
    },
    maxBufferSize: opts.maxBuffer ?? SSE_MAX_BUFFER,
  });
  // One decoder for the whole stream: it holds the first bytes of a character cut by a chunk.
  const decoder = new TextDecoder();
  return {
    push(chunk) {
      if (overflow) throw new SseOverflowError();
      parser.feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
      if (overflow) throw new SseOverflowError();
    },
  };
}

/** Reads a whole stream of bytes, calling onMessage for each message as it completes. */
export async function readSse(body: AsyncIterable<Uint8Array>, onMessage: (m: SseMessage) => void, opts: { onComment?: (text: string) => void; maxBuffer?: number } = {}): Promise<void> {
  const reader = sseReader(onMessage, opts);
  for await (const chunk of body) reader.push(chunk);
}
