import { createServer, type IncomingMessage, type Server } from 'node:http';

// A scripted OpenAI-compatible upstream on a local port: each request takes the next scripted
// answer (plain JSON, an error, a stream, a stream that stalls) and is recorded for the test.
// test/scripted-anthropic.ts and test/scripted-responses.ts script the agent CLIs' wires on it.

/** An answer may be made from the request it answers (an upstream that echoes what it was sent). */
type FromRequest<T> = T | ((r: Recorded) => T);

export type Scripted =
  | { status?: number; json: FromRequest<unknown>; headers?: Record<string, string> }
  /**
   * Server-sent events, one per chunk: `data: <json>` lines closed by `data: [DONE]` (chat
   * completions), or with `events` an `event: <chunk.type>` line before each and no [DONE] (the
   * Anthropic Messages and OpenAI Responses streams).
   */
  | { stream: FromRequest<unknown[]>; delayMs?: number; stall?: boolean; events?: boolean }
  /** Bytes written as they are, one write each (a character may be cut between two). */
  | { raw: FromRequest<(string | Buffer)[]>; delayMs?: number };

const made = <T>(v: FromRequest<T>, r: Recorded): T => (typeof v === 'function' ? (v as (r: Recorded) => T)(r) : v);

export interface Recorded {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** Resolves when the client closed the request (an abort, or the normal end). */
  closed: Promise<void>;
  /** Whether the client went away before the answer was complete. */
  aborted: () => boolean;
}

export interface FakeUpstream {
  url: string;
  requests: Recorded[];
  script(...answers: Scripted[]): void;
  /** Drops the answers not yet given: what a failed test left cannot answer the next test's requests. */
  forget(): void;
  close(): Promise<void>;
}

export const completion = (content: string, extra: Record<string, unknown> = {}) => ({
  id: 'chatcmpl-fake',
  object: 'chat.completion',
  created: 1,
  model: 'm1',
  choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  ...extra,
});

export const toolCallCompletion = (calls: { id: string; name: string; args: unknown }[]) => ({
  id: 'chatcmpl-fake',
  object: 'chat.completion',
  created: 1,
  model: 'm1',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: null, tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })) },
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
});

export const textChunks = (parts: string[], usage = true): unknown[] => [
  { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] },
  ...parts.map((p) => ({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta: { content: p }, finish_reason: null }] })),
  { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
  ...(usage ? [{ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [], usage: { prompt_tokens: 4, completion_tokens: parts.length, total_tokens: 4 + parts.length } }] : []),
];

/**
 * `scripted` picks the requests the script answers (by default all); any other is answered 404 and
 * neither recorded nor given a scripted answer (an agent CLI's probe of `HEAD /`, say).
 */
export async function startFakeUpstream(opts: { scripted?: (method: string, path: string) => boolean } = {}): Promise<FakeUpstream> {
  const queue: Scripted[] = [];
  const requests: Recorded[] = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      if (opts.scripted && !opts.scripted(req.method ?? '', req.url ?? '')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `${req.method} ${req.url} is not scripted`, type: 'not_found' } }));
        return;
      }
      let done = false;
      let aborted = false;
      const closed = new Promise<void>((resolve) => {
        res.on('close', () => {
          aborted = !done;
          resolve();
        });
      });
      let body: unknown = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        // keep the text
      }
      const recorded: Recorded = { path: req.url ?? '', headers: req.headers, body, closed, aborted: () => aborted };
      requests.push(recorded);
      const next = queue.shift() ?? { status: 500, json: { error: { message: 'nothing scripted', type: 'server_error' } } };
      if ('json' in next) {
        done = true;
        res.writeHead(next.status ?? 200, { 'content-type': 'application/json', ...next.headers });
        res.end(JSON.stringify(made(next.json, recorded)));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if ('raw' in next) {
        const pieces = [...made(next.raw, recorded)];
        const write = () => {
          if (res.destroyed) return;
          const p = pieces.shift();
          if (p === undefined) {
            done = true;
            res.end();
            return;
          }
          res.write(p);
          setTimeout(write, next.delayMs ?? 5);
        };
        write();
        return;
      }
      const chunks = [...made(next.stream, recorded)];
      const tick = () => {
        if (res.destroyed) return;
        const c = chunks.shift();
        if (c === undefined) {
          if (next.stall) return; // keeps the stream open forever
          done = true;
          res.end(next.events ? undefined : 'data: [DONE]\n\n');
          return;
        }
        const type = (c as { type?: unknown }).type;
        res.write(next.events && typeof type === 'string' ? `event: ${type}\ndata: ${JSON.stringify(c)}\n\n` : `data: ${JSON.stringify(c)}\n\n`);
        setTimeout(tick, next.delayMs ?? 0);
      };
      tick();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...answers) => queue.push(...answers),
    forget: () => void queue.splice(0),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
