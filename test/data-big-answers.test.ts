import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from './harness.js';

// An 8 MB answer of /transactions or /query is serialised by the database's worker and copied
// into the response as bytes: the daemon's event loop never parses it or serialises it again
// (each cost about 50 ms for 8 MB and stalled every other request; bench: data-big-answers).
// Checked by watching every JSON.parse and JSON.stringify the daemon's thread makes meanwhile.

const PAD = 'x'.repeat(8_000);
const ROWS = 1_000;

describe('big answers', () => {
  let d: TestDaemon;
  beforeAll(async () => {
    // The response check of the test harness parses every payload: off, to see the daemon's own work.
    d = await startTestDaemon({ checkResponses: false });
    expect((await d.api('POST', '/api/v1/data', { body: { name: 'big', schema: { tables: { pages: { columns: { pad: { type: 'text' } } } } } } })).status).toBe(201);
    for (let i = 0; i < ROWS; i += 100) {
      const r = await d.api('POST', '/api/v1/data/big/transactions', { body: { operations: [{ op: 'insert', table: 'pages', rows: Array.from({ length: 100 }, () => ({ pad: PAD })) }] } });
      expect(r.status).toBe(200);
    }
  });
  afterAll(() => d.close());

  const { parse, stringify } = JSON;
  let largest = 0;
  const watch = () => {
    largest = 0;
    JSON.parse = ((text: string, ...rest: unknown[]) => {
      largest = Math.max(largest, typeof text === 'string' ? text.length : 0);
      return (parse as (...a: unknown[]) => unknown)(text, ...rest);
    }) as typeof JSON.parse;
    JSON.stringify = ((...args: unknown[]) => {
      const out = (stringify as (...a: unknown[]) => string | undefined)(...args);
      largest = Math.max(largest, out?.length ?? 0);
      return out;
    }) as typeof JSON.stringify;
  };
  afterEach(() => {
    JSON.parse = parse;
    JSON.stringify = stringify;
  });

  /** The request as bytes, so this test's own client parses nothing while it is watched. */
  const post = async (path: string, body: unknown) => {
    const text = stringify(body);
    watch();
    const res = await fetch(d.url + path, { method: 'POST', headers: { authorization: `Bearer ${d.key}`, 'content-type': 'application/json' }, body: text });
    const bytes = Buffer.from(await res.arrayBuffer());
    JSON.parse = parse;
    JSON.stringify = stringify;
    return { status: res.status, bytes, seen: largest };
  };

  it('a batch of 8 MB is handed on without the daemon parsing or serialising it', async () => {
    const r = await post('/api/v1/data/big/transactions', { operations: Array.from({ length: ROWS / 200 }, (_, k) => ({ op: 'list', table: 'pages', limit: 200, offset: k * 200 })) });
    expect(r.status).toBe(200);
    expect(r.bytes.length).toBeGreaterThan(8_000_000);
    const body = parse(r.bytes.toString('utf8')) as { ok: boolean; data: { rows: { pad: string }[] }[] };
    expect(body.ok).toBe(true);
    expect(body.data.flatMap((x) => x.rows)).toHaveLength(ROWS);
    expect(body.data[0]!.rows[0]!.pad).toBe(PAD);
    // Nothing near the answer's size went through JSON on this thread (the request is 300 bytes).
    expect(r.seen).toBeLessThan(64 * 1024);
  });

  it('a query answer is handed on the same way', async () => {
    const r = await post('/api/v1/data/big/query', { sql: 'SELECT _id, pad FROM pages LIMIT 100' });
    expect(r.status).toBe(200);
    const body = parse(r.bytes.toString('utf8')) as { ok: boolean; data: { rows: unknown[]; rowCount: number; truncated: boolean } };
    expect(body.data.rowCount).toBe(100);
    expect(r.bytes.length).toBeGreaterThan(800_000);
    expect(r.seen).toBeLessThan(64 * 1024);
  });
});
