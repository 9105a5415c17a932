import type { ProjectConfig } from './config/schema.js';
import type { DB } from './db/open.js';
import type { Leadership } from './db/pg/leader.js';
import type { EventLog, StoredEvent } from './events/outbox.js';
import type { SseHub } from './events/sse.js';
import type { Logger } from './kernel/log.js';
import type { SchemaNames } from './kernel/openapi.js';
import type { Close, Part } from './kernel/parts.js';
import type { Resource } from './kernel/resource.js';
import { routeDefiner, type AnyRoute } from './kernel/route.js';
import type { Clock } from './lib/clock.js';
import type { Services } from './lib/services.js';

// The per-daemon service slots are generic (lib/services.ts); resources take them from here with App.
import { serviceKey } from './lib/services.js';
export { serviceKey, Services, type ServiceKey } from './lib/services.js';

/** Whether this daemon runs the periodic jobs (on a shared state, one daemon does: db/pg/leader.ts). */
export const LEADER = serviceKey<Leadership>('leader');

/** What every handler can reach: the daemon's shared services, built once per daemon (parts/resources.ts). */
export interface App {
  root: string;
  stateDir: string;
  projectId: string;
  version: string;
  startedAt: Date;
  db: DB;
  events: EventLog;
  streams: SseHub;
  log: Logger;
  /** Time for timers and deadlines (approval timeouts); the system clock, or a test's fake. */
  clock: Clock;
  /** The daemon's environment (process.env, or what a test passed). */
  env: NodeJS.ProcessEnv;
  /** Per-daemon services of the resources, wired by their servers and the daemon's parts (see ServiceKey). */
  services: Services;
  /** The config in force now; a reload replaces it, so read it per use, never cache it. */
  config(): ProjectConfig;
  /** Where the daemon listens (known once it is listening). */
  address(): { host: string; port: number };
  /** Asks the daemon to shut down gracefully after the current response. */
  requestShutdown(): void;
}

export const route = routeDefiner<App>();

/** What a resource's background parts start with. */
export interface ResourceStart {
  app: App;
  /** Check every response and tool output against its schema (tests). */
  checkResponses: boolean;
}

/**
 * What the daemon runs for a resource: its descriptor's `server` (kernel/resource.ts), loaded by
 * the daemon only. Each field is optional; the daemon reads them in the descriptors' order.
 */
export interface ResourceServer {
  routes?: readonly AnyRoute<App>[];
  /**
   * Names of OpenAPI components (components.schemas) for its schemas that carry no `.meta({ id })`:
   * the document $refs each one instead of writing it out in every operation that uses it. A name
   * is part of the API: never rename one.
   */
  schemaNames?: SchemaNames;
  /**
   * What it gives the rest of the daemon before any part starts: its per-daemon services, its hooks
   * on other resources. Runs in the descriptors' order, before anything can write an event; what it
   * returns is called when the daemon closes.
   */
  wire?(app: App): Close | void | Promise<Close | void>;
  /** Background parts: started in the descriptors' order once all are wired, before the daemon listens; closed in reverse. */
  parts?: readonly Part<ResourceStart>[];
  /**
   * Runs in each event's transaction, after the event is written (its webhook deliveries, the
   * attention it needs). `ahead` is what its `readAhead` answered, for a write's first event only.
   */
  sink?(app: App, e: StoredEvent, ahead?: unknown): void | Promise<void>;
  /**
   * Reads the sink needs, made once per write before its first event takes an id (on PostgreSQL
   * the event-id counter is then held until the commit, every other writer waiting), and what
   * `quiet` decides with (EventLogOptions.readAhead).
   */
  readAhead?(app: App): Promise<unknown>;
  /**
   * Whether the sink would do nothing at all for `e` (no row, no event), given what its readAhead
   * answered. Only when every sink says so may a write's events go with its COMMIT on PostgreSQL
   * (EventLogOptions.quiet); a sink without it is never taken to be quiet.
   */
  quiet?(app: App, e: StoredEvent, ahead?: unknown): boolean;
  /** Retention steps: each deletes at most `batch` rows past their limits and returns how many went. */
  prune?: readonly { name: string; run(app: App, batch: number): number | Promise<number> }[];
  /** The secrets it holds now, for scrubbing foreign text (read at each call, never cached). */
  secrets?(app: App): string[] | Promise<string[]>;
}

/** A resource of this daemon: a descriptor whose server is a ResourceServer. */
export type AppResource = Resource<ResourceServer>;
