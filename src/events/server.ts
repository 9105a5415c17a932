import type { Clock } from '../lib/clock.js';
import type { EventLog } from './outbox.js';
import { eventRoutes } from './routes.js';

// What the daemon runs for the event log: its routes, and its retention (by age and by count,
// project.json events.retentionHours and events.maxEvents, read at each pass).

interface EventsApp {
  events: EventLog;
  clock: Clock;
  config(): { events: { retentionHours: number; maxEvents: number } };
}

export const server = {
  routes: eventRoutes,
  prune: [
    {
      name: 'events',
      run: (app: EventsApp, batch: number): Promise<number> => {
        const { retentionHours, maxEvents } = app.config().events;
        return app.events.prune({ olderThan: new Date(app.clock.now() - retentionHours * 3_600_000).toISOString(), keep: maxEvents }, batch);
      },
    },
  ],
};

export type EventsServer = typeof server;
