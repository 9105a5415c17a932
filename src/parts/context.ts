import type { IncomingMessage } from 'node:http';
import type { App } from '../app.js';
import type { ProjectEnv } from '../config/env-file.js';
import type { ProjectConfig } from '../config/schema.js';
import type { DB } from '../db/open.js';
import type { Leadership } from '../db/pg/leader.js';
import type { OutageLog } from '../db/pg/outage.js';
import type { EventLog } from '../events/outbox.js';
import type { SseHub, SseLimits } from '../events/sse.js';
import type { ConnectionLimits } from '../kernel/connections.js';
import type { Logger } from '../kernel/log.js';
import type { CookieSession, HttpServer } from '../kernel/server.js';
import type { TlsPair } from '../kernel/tls.js';
import type { Clock } from '../lib/clock.js';
import type { AssetSource } from '../resources/board/assets.js';
import type { LoadedResource } from '../resources/index.js';
import type { Runner } from '../resources/runs/runner.js';
import type { Setup } from '../resources/system/setup.js';
import type { Vault } from '../resources/vault/live.js';
import type { WorkerOptions } from '../resources/webhooks/worker.js';
import type { Api } from '../routes.js';
import type { statePaths } from '../state-dir.js';
import type { KeyRing } from './keys.js';

export interface DaemonOptions {
  root: string;
  /** Override project.json's server.host / server.port (the CLI's --host / --port). 0 = ephemeral. */
  host?: string;
  port?: number;
  /** Environment to read SERVICE_API_KEY and friends from (tests pass their own). */
  env?: NodeJS.ProcessEnv;
  /** Where log lines go; default stdout plus .svc/logs/daemon.log. */
  log?: Logger;
  /**
   * Where the default logger's lines go besides the log file, in batches of whole lines (default:
   * stdout, written off the event loop; `svc serve` on a terminal makes them readable).
   */
  console?: (lines: string) => void;
  /** Validate every response against its schema (on in tests). */
  checkResponses?: boolean;
  /** Time for timers and deadlines (approval timeouts); tests pass a fake clock. Default: the system's. */
  clock?: Clock;
  /** SSE heartbeat and backlog limits (tests shorten them). */
  sse?: Partial<SseLimits>;
  /** Webhook delivery seams (tests: a resolver, a jitter source). */
  webhooks?: WorkerOptions;
  /** Connection cap and timeouts (tests shorten them). */
  connections?: Partial<ConnectionLimits>;
  /** Between two retention passes (default PRUNE_EVERY_MS); tests that call pass() themselves set it long, so no pass of the daemon's own runs between theirs. */
  pruneEveryMs?: number;
  /** On a shared state, the backup poll for other daemons' events (default SHARED_POLL_MS); 0 turns it off, leaving LISTEN/NOTIFY alone (tests of that path). */
  eventsPollMs?: number;
  /**
   * Where the board's static files come from: default, dist/board next to this package's code
   * (resources/board/assets.ts boardFiles()); a single executable passes its embedded files.
   */
  boardAssets?: AssetSource;
}

/**
 * What the daemon's parts share, filled in as they start (src/daemon.ts lists them): each field is
 * set by the part its comment names, before any later part reads it.
 */
export interface DaemonContext {
  readonly opts: DaemonOptions;
  readonly root: string;
  readonly paths: ReturnType<typeof statePaths>;
  /** Every resource with its server (before the first part). */
  readonly resources: readonly LoadedResource[];
  /** The routes and their OpenAPI document (before the first part). */
  readonly api: Api;
  /** Asks the daemon to shut down (the app's requestShutdown). */
  readonly requestShutdown: () => void;

  /** config: the config in force (replaced by config reload), and what project.json's check warned of. */
  config: ProjectConfig;
  configWarnings: string[];
  /** config: the project's settings file and the environment it completes. */
  settings: ProjectEnv;
  env: NodeJS.ProcessEnv;
  /** config: the certificate pair, with server.tls. */
  tlsPair: TlsPair | undefined;
  /** logging */
  log: Logger;
  /** logging: one warning when a PostgreSQL server goes away, one line when it is back. */
  outages: OutageLog;
  /** state: the local key, the state database, and the shared state's URL (null on SQLite). */
  localKey: string;
  db: DB;
  sharedState: string | null;
  /** state: whether this daemon runs the periodic jobs (on a shared state one daemon does: db/pg/leader.ts). */
  leader: Leadership;
  projectId: string;
  /** state: the keys the API accepts. */
  keys: KeyRing;
  clock: Clock;
  /** events */
  events: EventLog;
  streams: SseHub;
  /** vault */
  vault: Vault;
  /** resources */
  app: App;
  setup: Setup;
  /** board: a request's board session, the HTTP server's second way to authenticate. */
  boardSession: (req: IncomingMessage) => Promise<CookieSession | null>;
  /** resources: made there (its routes need it), started last. */
  runner: Runner | null;
  /** HTTP: where it listens (the configured address until then), and its URL. */
  listening: { host: string; port: number };
  http: HttpServer;
  url: string;
  /** announce: daemon.json written and the start line logged. */
  announced: boolean;
}

/** A PostgreSQL server's notices on one of the daemon's clients, at debug. */
export const noticeTo = (ctx: DaemonContext, client: string) => (message: string) => ctx.log.debug('PostgreSQL notice', { client, message });
