import { LISTEN_APPLICATION, listen } from '../db/pg/listen.js';
import type { OutageReporter } from '../db/pg/outage.js';
import { guarded, type Logger } from '../kernel/log.js';
import { EVENTS_CHANNEL, type EventLog } from './outbox.js';

// Other daemons' events, on a state they share (PostgreSQL): the server notifies each commit that
// wrote some, and a poll every second covers a notification lost with a connection. Either way the
// log reads the table from the last id it published, so every stream hears every event once, in id order.
//
// A daemon alone does not notify: the server would wake its own listening session for each commit,
// to be told what it already published (about a tenth of PostgreSQL's work for a write). So:
// - each daemon looks in pg_stat_activity every PEERS_CHECK_MS for another daemon's listening
//   session; none there, its commits stop notifying (on from the start: nobody is missed before);
// - a daemon whose listening connection holds (again) waits until its commits that did not notify
//   have ended, then says "hello" on the channel: whoever hears it reads the log (and finds them);
// - a daemon that hears another's hello notifies from then on and, once its own commits that did not
//   notify have ended, answers "here": whoever hears that reads the log, and finds them;
// - while its listening connection is lost, a daemon notifies (it can neither look nor hear), and it
//   says "here" once more as it closes.
// A look that began before a hello came must not turn the notifications off: it may not have seen
// the newcomer's session. Daemons of a version without hellos listen as 'svc events' too: a look finds them.

/** Other daemons' events are looked for at least this often (notifications come sooner). */
export const SHARED_POLL_MS = 1_000;

/** A daemon looks this often whether another daemon listens (and at once when its own listening connection holds). */
export const PEERS_CHECK_MS = 5_000;

/** How long a closing daemon waits to tell the others of its last commits. */
const CLOSE_TELL_MS = 1_000;

const HELLO = 'hello:';
const HERE = 'here:';

/** Whether another daemon's listening session is on this database (run on this daemon's own). */
const OTHERS = 'SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()) AS others';

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
  /** How often the daemon looks for other daemons' listening sessions (default PEERS_CHECK_MS). */
  peersCheckMs?: number;
}

export function startFanOut(o: FanOutOptions): { looks(): number; close(): Promise<void> } {
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
  const writer = o.events.writer;
  /** Hellos heard from other daemons. */
  let hellos = 0;
  let looked = 0;
  const say = (word: string) => feed.query('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, word + writer]);
  /** Once this daemon's commits that did not notify have ended (new ones notify), the others are told to read. */
  const tell = async (word: string) => {
    await o.events.notifyCommits(true);
    await say(word);
  };
  const welcome = guarded(o.log, 'answering another daemon', () => tell(HERE));
  const look = guarded(o.log, 'looking for other daemons', async () => {
    const seen = hellos;
    const rows = await feed.query(OTHERS, [LISTEN_APPLICATION]);
    if (!rows || stopped) return;
    looked++;
    if (rows[0]?.others === true) {
      if (!o.events.notifies) welcome();
    } else if (seen === hellos) await o.events.notifyCommits(false);
  });
  const announce = guarded(o.log, 'telling other daemons of this one', async () => {
    await tell(HELLO);
    look();
  });
  const heard = (payload?: string) => {
    if (stopped) return;
    if (payload === undefined) {
      // Listening (again): what was committed meanwhile is read, and the others learn of this daemon.
      soon();
      announce();
    } else if (payload.startsWith(HELLO)) {
      if (payload.slice(HELLO.length) === writer) return;
      soon();
      hellos++;
      welcome();
    } else if (payload.startsWith(HERE)) {
      if (payload.slice(HERE.length) !== writer) soon();
    } else if (payload !== writer) soon(); // a commit's: this daemon's own were published at commit
  };
  const feed = listen(o.url, EVENTS_CHANNEL, heard, {
    outage: o.outage,
    onNotice: o.onNotice,
    onLost: () => void o.events.notifyCommits(true),
  });
  const poll = o.pollMs === 0 ? undefined : setInterval(catchUp, o.pollMs ?? SHARED_POLL_MS);
  const peers = setInterval(look, o.peersCheckMs ?? PEERS_CHECK_MS);
  return {
    /** Looks that were answered (tests wait for one). */
    looks: () => looked,
    close: async () => {
      stopped = true;
      clearInterval(poll);
      clearInterval(peers);
      // Its last commits that did not notify are read by the others: at once, or by their poll
      // (a commit stuck on a server that stopped answering must not hold the shutdown up).
      let timer: NodeJS.Timeout | undefined;
      const told = tell(HERE).catch((err: unknown) => o.log.debug('could not tell other daemons of the last commits', { error: String(err) }));
      await Promise.race([told, new Promise<void>((r) => (timer = setTimeout(r, CLOSE_TELL_MS)))]);
      clearTimeout(timer);
      await feed.close();
    },
  };
}
