import type { ProjectConfig } from './config/schema.js';
import type { DB } from './db/open.js';
import type { EventLog } from './events/outbox.js';
import type { SseHub } from './events/sse.js';
import type { Logger } from './kernel/log.js';
import type { Clock } from './lib/clock.js';
import { routeDefiner } from './kernel/route.js';
import type { Services } from './lib/services.js';

// The per-daemon service slots are generic (lib/services.ts); resources take them from here with App.
export { serviceKey, Services, type ServiceKey } from './lib/services.js';

/** What every handler can reach: the daemon's shared services, built once in daemon.ts. */
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
  /** Per-daemon services of the resources, wired in daemon.ts (see ServiceKey). */
  services: Services;
  /** The config in force now; a reload replaces it, so read it per use, never cache it. */
  config(): ProjectConfig;
  /** Where the daemon listens (known once it is listening). */
  address(): { host: string; port: number };
  /** Asks the daemon to shut down gracefully after the current response. */
  requestShutdown(): void;
}

export const route = routeDefiner<App>();
