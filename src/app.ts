import type { ProjectConfig } from './config/schema.js';
import type { DB } from './db/open.js';
import type { Leadership } from './db/pg/leader.js';
import type { EventLog } from './events/outbox.js';
import type { SseHub } from './events/sse.js';
import type { Logger } from './kernel/log.js';
import type { Clock } from './lib/clock.js';
import { routeDefiner } from './kernel/route.js';

/**
 * A typed slot for one per-daemon service (a resource's live state: its index, worker, hooks),
 * declared by the resource that owns it and filled in daemon.ts. Each daemon has its own
 * Services, so two daemons in one process never share state.
 */
export interface ServiceKey<T> {
  readonly name: string;
  /** Never set; carries T for the type checker. */
  readonly type?: T;
}

export const serviceKey = <T>(name: string): ServiceKey<T> => ({ name });

/** Whether this daemon runs the periodic jobs (on a shared state, one daemon does: db/pg/leader.ts). */
export const LEADER = serviceKey<Leadership>('leader');

export class Services {
  private readonly map = new Map<ServiceKey<unknown>, unknown>();

  provide<T>(key: ServiceKey<T>, value: T): T {
    if (this.map.has(key)) throw new Error(`service ${key.name} is provided twice`);
    this.map.set(key, value);
    return value;
  }

  get<T>(key: ServiceKey<T>): T {
    if (!this.map.has(key)) throw new Error(`service ${key.name} is not provided; daemon.ts wires it`);
    return this.map.get(key) as T;
  }
}

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
