import { afterEach, describe, expect, it, vi } from 'vitest';
import { STATE_MIGRATIONS } from '../../src/state-schema.js';
import { openDatabase } from '../../src/db/open.js';
import { EventLog, type StoredEvent } from '../../src/events/outbox.js';
import { SseHub } from '../../src/events/sse.js';
import { systemClock } from '../../src/lib/clock.js';

/** Just enough of a ServerResponse for the hub: records what is written. */
function fakeRes() {
  const writes: (string | Buffer)[] = [];
  let ended = false;
  return {
    writes,
    frames: () =>
      writes
        .filter((w) => !String(w).startsWith('retry'))
        .map(String)
        .join(''),
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
  it('writes the events of one loop turn to each stream in one write, one shared buffer for all streams, in order', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'performance'] });
    const events = new EventLog(await openDatabase(':memory:', STATE_MIGRATIONS), { clock: systemClock });
    const hub = new SseHub(events, systemClock);
    const streams = [fakeRes(), fakeRes(), fakeRes()];
    for (const res of streams) await hub.open(res as never, { keyId: 'k', matches: () => true });
    for (let i = 0; i < 5; i++) await events.write(async () => events.emit('task:removed', { taskId: `t${i}` }));
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
    await events.write(async () => events.emit('task:removed', { taskId: 't5' }));
    vi.advanceTimersByTime(1);
    expect(streams[0]!.writes).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(streams[0]!.writes).toHaveLength(3);

    // Shutting down writes what is queued before the streams end.
    await events.write(async () => events.emit('task:removed', { taskId: 't6' }));
    hub.closeAll();
    expect(streams[0]!.frames()).toContain('data: {"taskId":"t6"}');
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('where a stream starts, on a shared state', () => {
  it("is read before the headers go out: an event another daemon commits once the client has them is the stream's", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'performance'] });
    // The log as a daemon on a shared state sees it: other daemons' commits are in the table at
    // once (lastId), and reach the listeners at the next catch-up.
    const table: StoredEvent[] = [];
    const listeners: ((e: StoredEvent) => void)[] = [];
    let heard = 0;
    const log = {
      lastId: () => table.at(-1)?.id ?? 0,
      heardId: () => heard,
      oldestId: () => table[0]?.id ?? null,
      since: (after: number, limit: number) => table.filter((e) => e.id > after).slice(0, limit),
      subscribe: (l: (e: StoredEvent) => void) => (listeners.push(l), () => undefined),
    };
    const hub = new SseHub(log as never, systemClock);
    const res = fakeRes();
    // The client has the headers and writes through another daemon before this one reads anything more.
    res.flushHeaders = () => void table.push({ id: 1, name: 'task:removed', data: { taskId: 'right after' }, timestamp: new Date(0).toISOString() });
    await hub.open(res as never, { keyId: 'k', matches: () => true });
    for (const e of table) {
      heard = e.id;
      for (const l of listeners) l(e);
    }
    vi.advanceTimersByTime(0);
    expect(res.frames()).toContain('data: {"taskId":"right after"}');
    hub.closeAll();
  });
});
