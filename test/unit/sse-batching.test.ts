import { afterEach, describe, expect, it, vi } from 'vitest';
import { STATE_MIGRATIONS } from '../../src/db/migrations.js';
import { openDatabase } from '../../src/db/open.js';
import { EventLog } from '../../src/events/outbox.js';
import { SseHub } from '../../src/events/sse.js';

/** Just enough of a ServerResponse for the hub: records what is written. */
function fakeRes() {
  const writes: (string | Buffer)[] = [];
  let ended = false;
  return {
    writes,
    frames: () => writes.filter((w) => !String(w).startsWith('retry')).map(String).join(''),
    writeHead: () => undefined,
    flushHeaders: () => undefined,
    on: () => undefined,
    write: (chunk: string | Buffer) => writes.push(chunk),
    end: () => (ended = true),
    destroy: () => undefined,
    destroyed: false,
    get writableEnded() {
      return ended;
    },
    writableNeedDrain: false,
    writableLength: 0,
  };
}

afterEach(() => vi.useRealTimers());

describe('SSE fan-out batching', () => {
  it('writes the events of one loop turn to each stream in one write, one shared buffer for all streams, in order', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'performance'] });
    const events = new EventLog(openDatabase(':memory:', STATE_MIGRATIONS));
    const hub = new SseHub(events);
    const streams = [fakeRes(), fakeRes(), fakeRes()];
    for (const res of streams) hub.open(res as never, { keyId: 'k', matches: () => true });
    for (let i = 0; i < 5; i++) events.write(() => events.emit('task:removed', { taskId: `t${i}` }));
    // Nothing written per event: the frames wait for the end of this turn.
    for (const res of streams) expect(res.writes).toHaveLength(1); // retry: only
    vi.advanceTimersByTime(0);
    const batches = streams.map((res) => res.writes.slice(1));
    for (const b of batches) expect(b).toHaveLength(1);
    expect(batches[1]![0]).toBe(batches[0]![0]);
    expect(batches[2]![0]).toBe(batches[0]![0]);
    const ids = [...streams[0]!.frames().matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual([1, 2, 3, 4, 5]);
    expect(streams[0]!.frames()).toContain('data: {"taskId":"t4"}');

    // Right after a write, the next batch waits out the 2 ms window rather than going at once.
    events.write(() => events.emit('task:removed', { taskId: 't5' }));
    vi.advanceTimersByTime(1);
    expect(streams[0]!.writes).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(streams[0]!.writes).toHaveLength(3);

    // Shutting down writes what is queued before the streams end.
    events.write(() => events.emit('task:removed', { taskId: 't6' }));
    hub.closeAll();
    expect(streams[0]!.frames()).toContain('data: {"taskId":"t6"}');
    expect(vi.getTimerCount()).toBe(0);
  });
});
