import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

// A real HTTP receiver on 127.0.0.1 port 0 for webhook tests. Each request takes the next planned
// answer (default 200): a status with headers, `hang` (never answers), or `drop` (closes the socket).

export type Answer = number | { status: number; headers?: Record<string, string>; body?: string } | 'hang' | 'drop';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
  /** What the receiver answered. */
  answer: Answer;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Answers for the next requests, in order; then `fallback`. */
  plan(...answers: Answer[]): void;
  fallback: Answer;
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  /** Drops the connections of requests held by `hang`, and keeps listening. */
  dropHanging(): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const queue: Answer[] = [];
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  let waiters: (() => void)[] = [];
  const r: Receiver = {
    url: '',
    port: 0,
    received,
    fallback: 200,
    plan: (...answers) => void queue.push(...answers),
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`receiver got ${received.length} of ${count} deliveries in time`);
        await new Promise<void>((res) => {
          const t = setTimeout(res, 50);
          waiters.push(() => {
            clearTimeout(t);
            res();
          });
        });
      }
      return received;
    },
    dropHanging() {
      for (const res of hanging) res.destroy();
      hanging.clear();
    },
    async close() {
      for (const res of hanging) res.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((res) => server.close(() => res()));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const a = queue.length ? queue.shift()! : r.fallback;
      received.push({ path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), answer: a });
      const w = waiters;
      waiters = [];
      w.forEach((f) => f());
      if (a === 'hang') {
        hanging.add(res);
        return;
      }
      if (a === 'drop') {
        req.socket.destroy();
        return;
      }
      const spec = typeof a === 'number' ? { status: a } : a;
      res.writeHead(spec.status, spec.headers);
      res.end(spec.body ?? `answer ${spec.status}`);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  const addr = server.address();
  r.port = typeof addr === 'object' && addr ? addr.port : 0;
  r.url = `http://127.0.0.1:${r.port}`;
  return r;
}
