import type { Resource } from '../kernel/resource.js';
import type { EventsServer } from './server.js';

// The event log as a part of the API: the live stream and the catalog (/v1/events) (`svc events` is the CLI's: src/cli/events-command.ts),
// and the events table with its retention. The events themselves are the resources' (their
// descriptors name their categories; the schemas are in registry.ts).

export const eventsResource: Resource<EventsServer> = {
  name: 'events',
  endpoints: [{ endpoint: 'GET /v1/events/catalog', command: 'svc events catalog' }],
  // Made by db/migrations/001.
  tables: ['events'],
  server: async () => (await import('./server.js')).server,
};
