// The run's throwaway PostgreSQL (scripts/throwaway-postgres.mjs, shared with bench/), typed.
import { startThrowawayPostgres } from '../scripts/throwaway-postgres.mjs';

export interface TestPostgres {
  /** The superuser's URL: what a test project's data.url is. */
  url: string;
  stop(): void;
  /** Stops the server but keeps its data (start() brings it back on the same port). */
  halt(): void;
  start(): void;
}

export const startTestPostgres = (): Promise<TestPostgres | { skip: string }> => startThrowawayPostgres();
