import { describe, expect, it } from 'vitest';
import { mergeToolCalls } from '../../src/resources/chat/tool-calls.js';
import { sseReader, SseOverflowError, type SseMessage } from '../../src/lib/sse-read.js';

// The one SSE reader: whatever way the network cuts the bytes, the messages come out whole.

const TEXT = 'héllo 🌍 wörld, 日本語 ✓';
const STREAM = Buffer.from(`: hi\r\nid: 7\r\nevent: chunk\r\ndata: {"c":"${TEXT}"}\r\n\r\ndata: ${TEXT}\ndata: second line\n\nretry: 10\n\n`, 'utf8');
const EXPECTED: SseMessage[] = [
  { id: '7', event: 'chunk', data: `{"c":"${TEXT}"}` },
  { id: '7', event: 'message', data: `${TEXT}\nsecond line` },
];

function read(chunks: Buffer[]): { messages: SseMessage[]; comments: string[] } {
  const messages: SseMessage[] = [];
  const comments: string[] = [];
  const r = sseReader((m) => messages.push(m), { onComment: (c) => comments.push(c) });
  for (const c of chunks) r.push(c);
  return { messages, comments };
}

describe('sseReader', () => {
  it('reads the stream whole, whatever single byte it is cut at (every split point)', () => {
    expect(STREAM.toString('utf8')).toContain(TEXT);
    for (let i = 0; i <= STREAM.length; i++) {
      const got = read([STREAM.subarray(0, i), STREAM.subarray(i)]);
      expect(got.messages, `cut at byte ${i}`).toEqual(EXPECTED);
      expect(got.comments).toEqual(['hi']);
    }
  });

  it('reads it whole when cut at every pair of points, and byte by byte', () => {
    for (let i = 0; i <= STREAM.length; i += 3) {
      for (let j = i; j <= STREAM.length; j++) {
        expect(read([STREAM.subarray(0, i), STREAM.subarray(i, j), STREAM.subarray(j)]).messages, `cut at ${i} and ${j}`).toEqual(EXPECTED);
      }
    }
    expect(read([...STREAM].map((b) => Buffer.from([b]))).messages).toEqual(EXPECTED);
  });

  it('refuses a message that never ends beyond its bound, rather than buffering without limit', () => {
    const r = sseReader(() => {}, { maxBuffer: 1024 });
    expect(() => {
      for (let i = 0; i < 10; i++) r.push(Buffer.from('data: ' + 'x'.repeat(200)));
    }).toThrow(SseOverflowError);
  });
});

describe('mergeToolCalls', () => {
  it('puts the fragments of a streamed call back together, per index, in index order', () => {
    const merged = mergeToolCalls([
      { index: 1, id: 'call_b', type: 'function', function: { name: 'list_tasks', arguments: '' } },
      { index: 0, id: 'call_a', type: 'function', function: { name: 'create_task', arguments: '{"ti' } },
      { index: 0, function: { arguments: 'tle":"x' } },
      { index: 1, function: { arguments: '{}' } },
      { index: 0, function: { arguments: '"}' } },
    ]);
    expect(merged).toEqual([
      { id: 'call_a', type: 'function', function: { name: 'create_task', arguments: '{"title":"x"}' } },
      { id: 'call_b', type: 'function', function: { name: 'list_tasks', arguments: '{}' } },
    ]);
  });

  it('keeps a name repeated in every fragment once, continues an index-less fragment, and skips junk', () => {
    expect(mergeToolCalls([{ index: 0, id: 'c', function: { name: 'f', arguments: '{"a"' } }, null, 'x', { function: { name: 'f', arguments: ':1}' } }])).toEqual([
      { id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
    ]);
  });
});
