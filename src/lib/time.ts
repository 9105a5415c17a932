import type { Clock } from './clock.js';

/**
 * ISO 8601 UTC with milliseconds: the one timestamp format of the API. A daemon's services pass
 * `app.clock`, so the times they write are the ones its timers compare (a test's fake clock).
 */
export const nowIso = (clock: Pick<Clock, 'now'>): string => new Date(clock.now()).toISOString();
