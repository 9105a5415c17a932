// A PostgreSQL server that goes away is an outage: requests that need it answer 503 until it is
// back, and the daemon says so twice, one warning when the outage starts and one line when it
// ends, instead of a line (or a stack) per failed request, timer or connection. One OutageLog per
// daemon sees every client of every server the daemon uses (the state's statements, its event
// feed, the application databases' pools); an outage is a server's, whichever of them saw it.

/** Where the two lines go (the daemon's logger). */
export interface OutageLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
}

/** What one client of a server tells of what it met. */
export interface OutageReporter {
  /**
   * An attempt to use the server failed because it cannot be reached (not because the statement
   * was wrong). `startedAt` (the OutageLog's clock) is when the attempt began: one that began
   * before the server was last seen back belongs to the outage that ended, not to a new one.
   */
  failed(err: unknown, startedAt?: number): void;
  /**
   * The server answered (whatever it answered) an attempt begun at `startedAt`: one begun before
   * the outage started says nothing of whether it is over.
   */
  succeeded(startedAt?: number): void;
  /** The OutageLog's clock, for `startedAt`. */
  now(): number;
}

interface Server {
  /** When the current outage started (null: none). */
  since: number | null;
  /** Failures seen during it. */
  failures: number;
  /** The clients that saw it. */
  parts: Set<string>;
  /** When the last outage ended. */
  backAt: number;
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export class OutageLog {
  private readonly servers = new Map<string, Server>();

  constructor(
    private readonly log: OutageLogger,
    /** Milliseconds on a monotonic clock; only differences are used. */
    readonly now: () => number = () => performance.now(),
  ) {}

  /** The reporter of one client (`part`: state, events, data) of the server at `url`. */
  reporter(url: string, part: string): OutageReporter {
    const where = serverOf(url);
    let s = this.servers.get(where);
    if (!s) this.servers.set(where, (s = { since: null, failures: 0, parts: new Set(), backAt: -Infinity }));
    const server = s;
    return {
      now: this.now,
      failed: (err, startedAt) => {
        if (server.since === null) {
          if (startedAt !== undefined && startedAt < server.backAt) return;
          server.since = this.now();
          server.failures = 0;
          server.parts.clear();
          this.log.warn('PostgreSQL cannot be reached; what needs it answers 503 until it is back (logged again once it is)', { server: where, client: part, error: message(err) });
        }
        server.failures++;
        server.parts.add(part);
      },
      succeeded: (startedAt) => {
        if (server.since === null || (startedAt !== undefined && startedAt < server.since)) return;
        const seconds = Math.round((this.now() - server.since) / 100) / 10;
        this.log.info('PostgreSQL is reachable again', { server: where, client: part, outageSeconds: seconds, failures: server.failures, clients: [...server.parts].sort() });
        server.since = null;
        server.backAt = this.now();
      },
    };
  }
}

/** host:port of a postgres:// URL: what names a server in these lines (never a user or password). */
function serverOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}`;
  } catch {
    return '(an unparseable URL)';
  }
}
