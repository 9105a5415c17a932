import { listen } from '../db/pg/listen.js';
import type { OutageReporter } from '../db/pg/outage.js';
import { guarded, type Logger } from '../kernel/log.js';
import { EVENTS_CHANNEL, type EventLog } from './outbox.js';

// Other daemons' events, on a state they share (PostgreSQL): the server notifies each commit that
// wrote some, and a poll every second covers a notification lost with a connection. Either way the
// log reads the table from the last id it published, so every stream hears every event once, in id order.

/** Other daemons' events are looked for at least this often (notifications come sooner). */
export const SHARED_POLL_MS = 1_000;

export interface FanOutOptions {
  /** The shared state's URL. */
  url: string;
  events: EventLog;
  log: Logger;
  /** Told when the listening connection is lost, and when it holds again. */
  outage?: OutageReporter;
  /** The server's notices on that connection. */
  onNotice?: (message: string) => void;
  /** The backup poll's period (default SHARED_POLL_MS); 0 turns it off, leaving LISTEN/NOTIFY alone (tests of that path). */
  pollMs?: number;
}

export function startFanOut(o: FanOutOptions): { close(): Promise<void> } {
  let stopped = false;
  const catchUp = guarded(o.log, "reading other daemons' events", () => (stopped ? undefined : o.events.catchUp()));
  let queued = false;
  const soon = () => {
    if (queued) return;
    queued = true;
    setImmediate(() => {
      queued = false;
      catchUp();
    });
  };
  // A notification names the log that committed: this daemon's own were published at commit.
  const feed = listen(o.url, EVENTS_CHANNEL, (writer) => writer !== o.events.writer && soon(), { outage: o.outage, onNotice: o.onNotice });
  const poll = o.pollMs === 0 ? undefined : setInterval(catchUp, o.pollMs ?? SHARED_POLL_MS);
  return {
    close: () => {
      stopped = true;
      clearInterval(poll);
      return feed.close();
    },
  };
}
