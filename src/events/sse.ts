import type { ServerResponse } from 'node:http';
import { AppError } from '../kernel/errors.js';
import type { EventMatcher } from './filter.js';
import type { EventLog, StoredEvent } from './outbox.js';

export interface SseLimits {
  /** A `: ping` comment this often keeps proxies and clients from timing out. */
  heartbeatMs: number;
  /** A client this many events behind (unflushed) is disconnected. */
  maxBacklogEvents: number;
  /** …or this many bytes behind. */
  maxBacklogBytes: number;
}

export const DEFAULT_SSE_LIMITS: SseLimits = { heartbeatMs: 15_000, maxBacklogEvents: 1000, maxBacklogBytes: 1024 * 1024 };

const REPLAY_PAGE = 500;
/** Live frames are written at most this often per stream (see SseHub.queue). */
const FLUSH_MS = 2;

function sameFrames(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function frame(e: StoredEvent): string {
  return `id: ${e.id}\nevent: ${e.name}\ndata: ${JSON.stringify(e.data)}\n\n`;
}

interface Stream {
  res: ServerResponse;
  keyId: string;
  matches: EventMatcher;
  /** Highest event id handled (sent or filtered out); replay and live delivery both advance it. */
  cursor: number;
  /** True while history is still being read from the log; live events wait in the log meanwhile. */
  replaying: boolean;
  /** Events written since the socket last drained. */
  backlog: number;
  /** Live frames waiting for the end of this turn of the event loop (see queue()). */
  queued: string[];
  heartbeat: NodeJS.Timeout;
}

/**
 * The live event streams. Events reach a stream from memory once it is live; while it replays
 * (Last-Event-ID) it reads the durable log page by page as the socket drains, so history is never
 * buffered whole. A stream that falls too far behind is cut rather than buffered without bound.
 */
export class SseHub {
  private readonly streams = new Set<Stream>();
  private readonly unsubscribe: () => void;
  /** The last event's frame: every stream gets the same text, so it is serialised once, not per stream. */
  private framed: { id: number; text: string } | null = null;
  private readonly dirty: Stream[] = [];
  private flushTimer: { kind: 'immediate'; handle: NodeJS.Immediate } | { kind: 'timeout'; handle: NodeJS.Timeout } | null = null;
  private lastFlush = -Infinity;
  private closed = false;

  constructor(
    private readonly log: EventLog,
    private readonly limits: SseLimits = DEFAULT_SSE_LIMITS,
  ) {
    this.unsubscribe = log.subscribe((e) => {
      for (const s of this.streams) if (!s.replaying) this.deliver(s, e, true);
    });
  }

  get size(): number {
    return this.streams.size;
  }

  open(res: ServerResponse, opts: { keyId: string; matches: EventMatcher; lastEventId?: number }): void {
    // Shutting down: a stream opened now would hear nothing and hold its connection until the grace period ends.
    if (this.closed) throw new AppError('unavailable', 'The daemon is shutting down; reconnect shortly.');
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    const s: Stream = {
      res,
      keyId: opts.keyId,
      matches: opts.matches,
      cursor: this.log.lastId(),
      replaying: false,
      backlog: 0,
      queued: [],
      heartbeat: setInterval(() => this.write(s, ': ping\n\n'), this.limits.heartbeatMs),
    };
    s.heartbeat.unref();
    this.streams.add(s);
    res.on('close', () => this.drop(s));
    res.on('drain', () => {
      s.backlog = 0;
      if (s.replaying) this.replay(s);
    });
    res.write('retry: 2000\n\n');
    if (opts.lastEventId !== undefined && opts.lastEventId < s.cursor) {
      const oldest = this.log.oldestId();
      if (oldest !== null && opts.lastEventId < oldest - 1) {
        res.write(`: events ${opts.lastEventId + 1}-${oldest - 1} are past the retention window; reconcile through the resource endpoints\n\n`);
      }
      s.cursor = opts.lastEventId;
      s.replaying = true;
      this.replay(s);
    }
  }

  /** Closes the streams opened with keys that no longer exist. */
  revoke(liveKeyIds: ReadonlySet<string>): number {
    let n = 0;
    for (const s of this.streams) {
      if (!liveKeyIds.has(s.keyId)) {
        s.res.end();
        this.drop(s);
        n++;
      }
    }
    return n;
  }

  closeAll(): void {
    this.closed = true;
    this.flush();
    for (const s of this.streams) {
      s.res.end();
      this.drop(s);
    }
    this.unsubscribe();
  }

  private replay(s: Stream): void {
    // Synchronous reads: no event can be published between the last page and going live.
    // Stop whenever the socket is full and go on at 'drain', so history is never buffered whole.
    while (s.replaying) {
      const page = this.log.since(s.cursor, REPLAY_PAGE);
      for (const e of page) {
        if (s.res.writableNeedDrain) return;
        this.deliver(s, e);
      }
      if (page.length < REPLAY_PAGE) s.replaying = false;
    }
  }

  private deliver(s: Stream, e: StoredEvent, live = false): void {
    if (e.id <= s.cursor) return;
    s.cursor = e.id;
    if (!s.matches(e.name)) return;
    if (this.framed?.id !== e.id) this.framed = { id: e.id, text: frame(e) };
    if (live) this.queue(s, this.framed.text);
    else this.write(s, this.framed.text);
  }

  /**
   * Live frames are written in batches, at the end of the current turn of the event loop, and at
   * most once every FLUSH_MS: a socket write is a system call, and one per subscriber per event
   * made fan-out to 200 streams cost far more than the frames themselves. A quiet daemon writes at
   * once; a busy one gathers a few milliseconds of events into each write. Replay writes directly,
   * since it paces itself on the socket's drain.
   */
  private queue(s: Stream, text: string): void {
    if (s.queued.push(text) === 1) this.dirty.push(s);
    if (this.flushTimer) return;
    const wait = this.lastFlush + FLUSH_MS - performance.now();
    this.flushTimer =
      wait > 0 ? { kind: 'timeout', handle: setTimeout(() => this.flush(), wait) } : { kind: 'immediate', handle: setImmediate(() => this.flush()) };
  }

  private flush(): void {
    if (this.flushTimer?.kind === 'timeout') clearTimeout(this.flushTimer.handle);
    else if (this.flushTimer) clearImmediate(this.flushTimer.handle);
    this.flushTimer = null;
    this.lastFlush = performance.now();
    // Streams that heard the same events share one buffer (frames are the same strings).
    let shared: { frames: string[]; buf: Buffer } | null = null;
    for (const s of this.dirty.splice(0)) {
      const frames = s.queued;
      s.queued = [];
      if (!frames.length || !this.streams.has(s)) continue;
      if (!shared || !sameFrames(shared.frames, frames)) shared = { frames, buf: Buffer.from(frames.join(''), 'utf8') };
      this.write(s, shared.buf, frames.length);
    }
  }

  private write(s: Stream, text: string | Buffer, events = 1): void {
    if (s.res.destroyed || s.res.writableEnded) return;
    if (s.res.writableNeedDrain) s.backlog += events;
    s.res.write(text);
    if (s.backlog > this.limits.maxBacklogEvents || s.res.writableLength > this.limits.maxBacklogBytes) {
      // Too far behind: cut the connection; the client reconnects with Last-Event-ID and catches up from the log.
      s.res.destroy();
      this.drop(s);
    }
  }

  private drop(s: Stream): void {
    clearInterval(s.heartbeat);
    s.queued = [];
    this.streams.delete(s);
  }
}
