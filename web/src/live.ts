// The live event stream (GET /v1/events), read with fetch so the board sends Last-Event-ID itself
// on every reconnect: after a dropped connection or a daemon restart, the stream replays what was
// missed and the page never reloads. The session cookie and its token authenticate it.

import { sseReader } from '../../src/lib/sse-read.js';
import { csrfToken } from './api.js';
import type { StreamedEvent } from './types.js';

export interface LiveOptions {
  /** Replay the events after this id first (the recent history); later reconnects resume from the last event heard. */
  after?: number;
  /** Events up to this id are history: replayed, received with `at: null`. */
  historyUpTo?: number;
  onEvent(e: StreamedEvent): void;
  /** Connected (true) or waiting to reconnect (false); `resumed` is true after a reconnect. */
  onState(connected: boolean, resumed: boolean): void;
  onSignedOut(): void;
}

export function startLive(opts: LiveOptions): void {
  let lastId: number | undefined = opts.after;
  let connectedBefore = false;
  let delay = 250;

  const run = async (): Promise<void> => {
    for (;;) {
      try {
        const headers: Record<string, string> = { accept: 'text/event-stream', 'x-csrf-token': csrfToken() };
        if (lastId !== undefined) headers['last-event-id'] = String(lastId);
        const res = await fetch('/v1/events', { headers, credentials: 'same-origin', cache: 'no-store' });
        if (res.status === 401 || res.status === 403) {
          opts.onSignedOut();
          return;
        }
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        opts.onState(true, connectedBefore);
        connectedBefore = true;
        delay = 250;
        // svc's one reader of event-stream bytes (src/lib/sse-read.ts): CR/LF pairs split across
        // chunks, characters cut in two and oversized messages are handled as everywhere else.
        const sse = sseReader((m) => {
          if (m.id === undefined || !/^\d+$/.test(m.id) || !m.data) return;
          const id = Number(m.id);
          if (id === lastId) return;
          lastId = id;
          let parsed: unknown = m.data;
          try {
            parsed = JSON.parse(m.data);
          } catch {
            // kept as text
          }
          opts.onEvent({ id, name: m.event, data: parsed, at: id <= (opts.historyUpTo ?? 0) ? null : Date.now() });
        });
        const reader = res.body.getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          sse.push(value);
        }
      } catch {
        // the daemon went away or the network dropped: try again below
      }
      opts.onState(false, false);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 4000);
    }
  };
  void run();
}
