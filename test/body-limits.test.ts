import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY } from '../src/resources/webhooks/listen-command.js';
import { serviceSignature } from '../src/resources/webhooks/sign.js';
import { exited, startReady } from './cli-helpers.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { startReceiver } from './webhook-receiver.js';

// A body of exactly a limit is read; one byte more is 413 payload_too_large, never a 5xx, and the
// connection is handled cleanly: the whole answer arrives, then the server closes the connection
// (it does not read the rest), and the next connection is served. Sent over a raw socket with
// Transfer-Encoding: chunked, so no Content-Length announces the size: the limit is met while
// streaming, with the chunk boundaries placed before, on and across it.

const LIMIT = 2048;

/** Chunk sizes of a body of `n` bytes: one chunk, a boundary on the limit, chunks spanning it, and single bytes about it. */
const splits = (n: number): number[][] => {
  const cuts = [[n], [LIMIT - 1, n - LIMIT + 1], [LIMIT - 100, n - LIMIT + 100], [1, LIMIT / 2, n - 1 - LIMIT / 2], [LIMIT - 2, 1, 1, ...(n > LIMIT ? [1] : [])]];
  if (n > LIMIT) cuts.push([LIMIT, 1]);
  for (const c of cuts) if (c.reduce((a, b) => a + b, 0) !== n) throw new Error(`chunks ${c.join('+')} are not ${n} bytes`);
  return cuts;
};

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One HTTP/1.1 connection read by hand: requests go out as written, answers are parsed by their
 * Content-Length, and `closed` resolves when the server ends the connection.
 */
class Conn {
  private readonly socket: Socket;
  private buf = Buffer.alloc(0);
  private wake: (() => void) | null = null;
  readonly closed: Promise<'end' | Error>;
  private ended = false;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('data', (c: Buffer) => {
      this.buf = Buffer.concat([this.buf, c]);
      this.wake?.();
    });
    this.closed = new Promise((resolve) => {
      this.socket.on('end', () => resolve('end'));
      // Writing the rest of a refused body may meet the closed socket (EPIPE): that is the client's
      // side of a clean close. A reset before the answer would show as a missing answer instead.
      this.socket.on('error', (err) => resolve(err));
    });
    void this.closed.then(() => {
      this.ended = true;
      this.wake?.();
    });
  }

  /** Sends the head, then each chunk of `body` as `sizes` says, each in a write of its own after a turn of the loop. */
  async send(head: string, body: Buffer, sizes: number[]): Promise<void> {
    this.socket.write(`${head}\r\nTransfer-Encoding: chunked\r\n\r\n`);
    let at = 0;
    for (const n of sizes) {
      await new Promise((r) => setImmediate(r));
      if (this.ended) return;
      this.socket.write(Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), body.subarray(at, at + n), Buffer.from('\r\n')]));
      at += n;
    }
    if (!this.ended) this.socket.write('0\r\n\r\n');
  }

  /** The next answer, within `timeoutMs`. */
  async answer(timeoutMs = 10_000): Promise<Answer> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine, ...lines] = this.buf.subarray(0, end).toString('latin1').split('\r\n');
        const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
        const body = headers['transfer-encoding'] === 'chunked' ? dechunk(this.buf.subarray(end + 4)) : sized(this.buf.subarray(end + 4), Number(headers['content-length']));
        if (body) {
          this.buf = this.buf.subarray(end + 4 + body.used);
          return { status: Number(statusLine!.split(' ')[1]), headers, body: body.text };
        }
      }
      if (this.ended) throw new Error(`the connection ended before a whole answer: ${JSON.stringify(this.buf.toString('latin1').slice(0, 200))}`);
      if (Date.now() > deadline) throw new Error('no answer in time');
      await new Promise<void>((r) => {
        this.wake = r;
        setTimeout(r, deadline - Date.now()).unref();
      });
      this.wake = null;
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** A body of `length` bytes at the start of `buf`, or null until it has all come. */
function sized(buf: Buffer, length: number): { text: string; used: number } | null {
  if (!Number.isInteger(length)) throw new Error('an answer with neither Content-Length nor chunks');
  return buf.length >= length ? { text: buf.subarray(0, length).toString('utf8'), used: length } : null;
}

/** A chunked body at the start of `buf`, or null until its last chunk has come. */
function dechunk(buf: Buffer): { text: string; used: number } | null {
  const parts: Buffer[] = [];
  for (let at = 0; ; ) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return null;
    const n = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
    if (buf.length < eol + 2 + n + 2) return null;
    if (n === 0) return { text: Buffer.concat(parts).toString('utf8'), used: eol + 4 };
    parts.push(buf.subarray(eol + 2, eol + 2 + n));
    at = eol + 2 + n + 2;
  }
}

/** A JSON body of exactly `n` bytes: `fields` with a padding string filling the rest. */
function jsonOf(n: number, fields: Record<string, unknown>, pad: (s: string) => Record<string, unknown>): Buffer {
  const empty = Buffer.byteLength(JSON.stringify({ ...fields, ...pad('') }));
  const body = Buffer.from(JSON.stringify({ ...fields, ...pad('x'.repeat(n - empty)) }));
  expect(body.length).toBe(n);
  return body;
}

describe(`the daemon's body limit (server.maxBodyBytes ${LIMIT})`, () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon({ config: { server: { maxBodyBytes: LIMIT } } });
  });
  afterAll(async () => {
    await d?.close();
  });

  let n = 0;
  const endpoints = [
    {
      name: 'POST /api/v1/agents',
      head: () => `POST /api/v1/agents HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAuthorization: Bearer ${d.key}\r\nContent-Type: application/json`,
      body: (size: number) => jsonOf(size, { name: `edge-${++n}` }, (s) => ({ systemPrompt: s })),
      accepted: 201,
      refused: (a: Answer) => expect(JSON.parse(a.body)).toMatchObject({ ok: false, code: 'payload_too_large' }),
    },
    {
      name: 'POST /mcp',
      head: () => `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAuthorization: Bearer ${d.key}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream`,
      body: (size: number) => jsonOf(size, { jsonrpc: '2.0', id: ++n, method: 'ping' }, (s) => ({ params: { _meta: { pad: s } } })),
      accepted: 200,
      refused: (a: Answer) => expect(JSON.parse(a.body)).toMatchObject({ ok: false, code: 'payload_too_large' }),
    },
    {
      name: 'POST /v1/chat/completions (OpenAI errors)',
      head: () => `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAuthorization: Bearer ${d.key}\r\nContent-Type: application/json`,
      body: (size: number) => jsonOf(size, { model: 'nobody', messages: [{ role: 'user', content: 'hi' }] }, (s) => ({ user: s })),
      accepted: null,
      refused: (a: Answer) => expect(JSON.parse(a.body)).toMatchObject({ error: { code: 'payload_too_large' } }),
    },
  ];

  describe.each(endpoints)('$name', (e) => {
    it.each(splits(LIMIT).map((s) => [s.join('+'), s] as const))(`exactly ${LIMIT} bytes in chunks of %s: read, and the connection stays open`, async (_n, sizes) => {
      const c = new Conn(d.port);
      try {
        await c.send(e.head(), e.body(LIMIT), sizes);
        const a = await c.answer();
        expect(a.status, a.body).not.toBe(413);
        expect(a.status, a.body).toBeLessThan(500);
        if (e.accepted !== null) expect(a.status, a.body).toBe(e.accepted);
        // Kept alive: the same connection serves the next request.
        await c.send(e.head(), e.body(LIMIT), [LIMIT]);
        expect((await c.answer()).status).toBe(a.status);
      } finally {
        c.destroy();
      }
    });

    it.each(splits(LIMIT + 1).map((s) => [s.join('+'), s] as const))(`${LIMIT + 1} bytes in chunks of %s: 413 payload_too_large, then the server closes`, async (_n, sizes) => {
      const c = new Conn(d.port);
      try {
        await c.send(e.head(), e.body(LIMIT + 1), sizes);
        const a = await c.answer();
        expect(a.status, a.body).toBe(413);
        expect(a.headers.connection).toBe('close');
        e.refused(a);
        expect(await c.closed).toBe('end');
      } finally {
        c.destroy();
      }
      // Nothing of it was kept, and the daemon serves the next connection.
      expect((await d.api('GET', '/healthz')).status).toBe(200);
    });
  });
});

describe(`svc webhooks listen's receiver (${MAX_BODY} bytes)`, () => {
  it(`reads and forwards a signed delivery of exactly ${MAX_BODY} bytes; one byte more is 413 payload_too_large, and it goes on receiving`, async () => {
    const d = await startTestDaemon();
    const fwd = await startReceiver();
    const listening = await startReady(['--url', d.url, '--api-key', d.key, 'webhooks', 'listen', '--events', 'team:created', '--forward-to', `${fwd.url}/local`]);
    const { child, err } = listening;
    try {
      const port = Number(/to http:\/\/127\.0\.0\.1:(\d+)\//.exec(err())![1]);
      const secret = /verify them with the secret (whsec_\S+)\./.exec(err())![1]!;
      const head = (body: Buffer) => {
        const t = Math.floor(Date.now() / 1000);
        return `POST / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nX-Service-Event: team:created\r\nX-Service-Signature: t=${t},v1=${serviceSignature(secret, t, body)}`;
      };
      const body = (size: number) => jsonOf(size, { event: 'team:created' }, (s) => ({ data: { name: s } }));

      const exact = body(MAX_BODY);
      const ok = new Conn(port);
      try {
        await ok.send(head(exact), exact, [MAX_BODY - 1, 1]);
        expect(await ok.answer()).toMatchObject({ status: 200, body: 'ok' });
        expect((await fwd.waitFor(1))[0]!.body.length).toBe(MAX_BODY);
      } finally {
        ok.destroy();
      }

      for (const sizes of [[MAX_BODY + 1], [MAX_BODY, 1], [MAX_BODY - 100, 200 + 1 - 100]]) {
        const over = body(MAX_BODY + 1);
        const c = new Conn(port);
        try {
          await c.send(head(over), over, sizes);
          const a = await c.answer();
          expect(a.status).toBe(413);
          expect(JSON.parse(a.body)).toMatchObject({ ok: false, code: 'payload_too_large' });
          expect(await c.closed).toBe('end');
        } finally {
          c.destroy();
        }
      }
      expect(fwd.received).toHaveLength(1);
      expect(child.exitCode).toBeNull();
      // Still receiving: a delivery the daemon sends now is forwarded.
      expect((await d.api('POST', '/api/v1/agents/teams', { body: { name: 'after-the-refusals', description: '' } })).status).toBe(201);
      expect(JSON.parse((await fwd.waitFor(2))[1]!.body)).toMatchObject({ event: 'team:created', data: { name: 'after-the-refusals' } });
    } finally {
      child.kill('SIGINT');
      await exited(child);
      await fwd.close();
      await d.close();
    }
  });
});
