import type { ProjectConfig } from './config/schema.js';
import type { DB } from './db/open.js';
import type { EventLog } from './events/outbox.js';
import type { SseHub } from './events/sse.js';
import type { Logger } from './kernel/log.js';
import { routeDefiner } from './kernel/route.js';
import type { Vault } from './resources/vault/keys.js';

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
  /** The daemon's environment (process.env, or what a test passed). */
  env: NodeJS.ProcessEnv;
  /** The open credential vault: its master key's location and derived keys. */
  vault: Vault;
  /** The config in force now; a reload replaces it, so read it per use, never cache it. */
  config(): ProjectConfig;
  /** Where the daemon listens (known once it is listening). */
  address(): { host: string; port: number };
  /** Asks the daemon to shut down gracefully after the current response. */
  requestShutdown(): void;
}

export const route = routeDefiner<App>();
