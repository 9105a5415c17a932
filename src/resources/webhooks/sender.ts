import type { Worker } from 'node:worker_threads';
import { startThread } from '../../lib/entry.js';
import type { Logger } from '../../kernel/log.js';
import type { Sent, ThreadRequest, ThreadResult } from './send.js';

// The daemon's side of the delivery thread (send-thread.ts): hands it deliveries, matches the
// answers, and restarts it if it ever dies (what it held is reported as a network error: retried).
// The thread starts with the first delivery, not with the daemon: a project without webhooks never
// pays its start-up (a second V8 heap and undici, some 25 MB of RSS).

const RESPAWN_MS = 1000;
/** How long close() lets a starting thread finish loading before stopping it anyway. */
const LOAD_WAIT_MS = 5000;

export interface SenderOptions {
  /** Names the thread resolves itself (tests: a resolver seam instead of real DNS). */
  hosts?: Record<string, string>;
}

export class Sender {
  /** Null until the first delivery. */
  private thread: Worker | null = null;
  private seq = 0;
  private readonly waiting = new Map<number, (r: { sent: Sent; durationMs: number }) => void>();
  private closed = false;
  /** False between the thread's death and its replacement; requests made meanwhile wait here. */
  private alive = false;
  private queued: ThreadRequest[] = [];
  /** Settles once the current thread has loaded its modules (or died). */
  private loaded: Promise<void> = Promise.resolve();

  constructor(
    private readonly opts: SenderOptions,
    private readonly log: Logger,
  ) {}

  private spawn(): void {
    const t = startThread(import.meta.url, './send-thread.js', { workerData: { hosts: this.opts.hosts } });
    let markLoaded!: () => void;
    this.loaded = new Promise((r) => (markLoaded = r));
    t.on('message', (r: ThreadResult | { loaded: true }) => {
      if ('loaded' in r) return markLoaded();
      const done = this.waiting.get(r.id);
      this.waiting.delete(r.id);
      done?.({ sent: r.sent, durationMs: r.durationMs });
    });
    t.on('error', (err) => this.log.error('the webhook delivery thread failed', { error: err.message }));
    t.on('exit', () => {
      markLoaded();
      if (this.thread !== t) return;
      this.alive = false;
      this.failWaiting(this.closed ? 'cut short by shutdown' : 'the delivery thread stopped');
      // A second later, not at once: a thread that cannot start must not spin.
      if (!this.closed) setTimeout(() => this.closed || this.spawn(), RESPAWN_MS).unref();
    });
    this.thread = t;
    this.alive = true;
    for (const q of this.queued.splice(0)) t.postMessage(q);
  }

  private failWaiting(error: string): void {
    const all = [...this.waiting.values()];
    this.waiting.clear();
    this.queued = [];
    for (const done of all) done({ sent: { result: { error }, responseBody: null, retryAfter: null, location: null }, durationMs: 0 });
  }

  send(p: Omit<ThreadRequest, 'id'>): Promise<{ sent: Sent; durationMs: number }> {
    if (this.closed) return Promise.resolve({ sent: { result: { error: 'cut short by shutdown' }, responseBody: null, retryAfter: null, location: null }, durationMs: 0 });
    const id = ++this.seq;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      const req: ThreadRequest = { id, ...p };
      if (this.alive) this.thread!.postMessage(req);
      else this.queued.push(req);
      if (!this.thread) this.spawn();
    });
  }

  /** Stops the thread; attempts under way end unanswered (the worker does not count them). */
  async close(): Promise<void> {
    this.closed = true;
    // A thread stopped while it still imports its modules leaves the files it was reading open in
    // this process (measured: one descriptor per file in flight), so it is let finish loading first.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.loaded, new Promise<void>((r) => (timer = setTimeout(r, LOAD_WAIT_MS)))]);
    clearTimeout(timer);
    await this.thread?.terminate();
    this.failWaiting('cut short by shutdown');
  }
}
