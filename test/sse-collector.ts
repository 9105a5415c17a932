import { sseReader, type SseMessage } from '../src/lib/sse-read.js';

export interface Collector {
  status: number;
  messages: SseMessage[];
  comments: string[];
  ended: boolean;
  /** Resolves once `predicate` holds over what has arrived. */
  until(predicate: (c: Collector) => boolean, timeoutMs?: number): Promise<void>;
  close(): void;
}

/** Reads the real SSE stream over HTTP and records every frame and comment. */
export async function collect(url: string, opts: { key?: string; filter?: string; lastEventId?: string | number; query?: string } = {}): Promise<Collector> {
  const u = new URL(url + '/v1/events' + (opts.query ?? ''));
  if (opts.filter !== undefined) u.searchParams.set('filter', opts.filter);
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.lastEventId !== undefined) headers['last-event-id'] = String(opts.lastEventId);
  const abort = new AbortController();
  const res = await fetch(u, { headers, signal: abort.signal });
  const c: Collector = {
    status: res.status,
    messages: [],
    comments: [],
    ended: false,
    async until(predicate, timeoutMs = 3000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(c)) {
        if (Date.now() > deadline) throw new Error(`SSE condition not met; got ${c.messages.map((m) => m.event).join(', ')}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    close: () => abort.abort(),
  };
  if (res.status !== 200 || !res.body) {
    c.ended = true;
    return c;
  }
  const reader = sseReader((m) => c.messages.push(m), { onComment: (t) => c.comments.push(t) });
  void (async () => {
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) reader.push(chunk);
    } catch {
      // aborted or cut by the server
    }
    c.ended = true;
  })();
  return c;
}
