// The run's throwaway PostgreSQL (scripts/throwaway-postgres.mjs, shared with bench/), typed.
import { startThrowawayPostgres } from '../scripts/throwaway-postgres.mjs';

export interface TestPostgres {
  /** The superuser's URL: what a test project's data.url is. */
  url: string;
  stop(): void;
  /** Stops the server but keeps its data (start() brings it back on the same port). */
  halt(): void;
  /** Kills it (pg_ctl's immediate mode: a crash, recovered at the next start), keeping its data. */
  kill(): void;
  start(): void;
}

/** `settings`: more server settings (name=value) over the defaults. */
export const startTestPostgres = (opts: { settings?: string[] } = {}): Promise<TestPostgres | { skip: string }> => startThrowawayPostgres(opts);
