// The live event stream (GET /v1/events), read with fetch so the board sends Last-Event-ID itself
// on every reconnect: after a dropped connection or a daemon restart, the stream replays what was
// missed and the page never reloads. The session cookie and its token authenticate it.

import { csrfToken } from './api.js';
import type { StreamedEvent } from './types.js';

export interface LiveOptions {
  onEvent(e: StreamedEvent): void;
  /** Connected (true) or waiting to reconnect (false); `resumed` is true after a reconnect. */
  onState(connected: boolean, resumed: boolean): void;
  onSignedOut(): void;
}

export function startLive(opts: LiveOptions): void {
  let lastId: number | undefined;
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
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let end: number;
          while ((end = buf.indexOf('\n\n')) !== -1) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            let id: number | undefined;
            let name = 'message';
            const data: string[] = [];
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) continue;
              const colon = line.indexOf(':');
              const field = colon === -1 ? line : line.slice(0, colon);
              const v = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
              if (field === 'id' && /^\d+$/.test(v)) id = Number(v);
              else if (field === 'event') name = v;
              else if (field === 'data') data.push(v);
            }
            if (id === undefined || !data.length) continue;
            lastId = id;
            let parsed: unknown = data.join('\n');
            try {
              parsed = JSON.parse(parsed as string);
            } catch {
              // kept as text
            }
            opts.onEvent({ id, name, data: parsed, at: Date.now() });
          }
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
