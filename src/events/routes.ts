import { z } from 'zod';
import { RAW_RESPONSE, routeDefiner } from '../kernel/route.js';
import { compileFilter } from './filter.js';
import { catalog } from './registry.js';
import type { SseHub } from './sse.js';

// events/ knows only the part of the daemon it needs, so it never depends on resources/ through App.
const route = routeDefiner<{ streams: SseHub }>();

const tag = 'Events';

const CatalogOut = z.array(
  z.object({
    category: z.string(),
    description: z.string(),
    events: z.array(z.object({ name: z.string(), description: z.string(), dataSchema: z.record(z.string(), z.unknown()) })),
  }),
);

export const eventRoutes = [
  route({
    method: 'GET',
    path: '/v1/events',
    operationId: 'streamEvents',
    summary: 'Live Server-Sent Events stream (bearer auth only; Last-Event-ID replays the last 24 h)',
    description:
      'Frames carry `id` (the durable event sequence, never reset), `event` (the name) and `data` (JSON). ' +
      'A `: ping` comment is sent every 15 s. A client more than 1,000 events or 1 MiB behind, or whose connection ' +
      'accepts nothing for 30 s, is disconnected; reconnect with Last-Event-ID to resume. At most 32 streams per key ' +
      '(429 `rate_limited` beyond) and 256 in all (503 `unavailable`), both with Retry-After. A key in the query string is refused.',
    tag,
    query: z.strictObject({
      filter: z.string().max(2000).optional().describe('Comma-separated event names or prefixes: `task:,completion:`, `task:*`, `*`.'),
    }),
    rawContentType: 'text/event-stream',
    response: z.string(),
    handler: ({ app, query, req, res, principal }) => {
      const matches = compileFilter(query.filter);
      const header = req.headers['last-event-id'];
      const lastEventId = typeof header === 'string' && /^\d{1,15}$/.test(header.trim()) ? Number(header.trim()) : undefined;
      app.streams.open(res, { keyId: principal!.keyId, matches, lastEventId });
      return RAW_RESPONSE;
    },
  }),
  route({
    method: 'GET',
    path: '/v1/events/catalog',
    operationId: 'eventCatalog',
    summary: 'Every event name by category, with a description and the JSON Schema of its data (no auth)',
    tag,
    auth: 'public',
    response: CatalogOut,
    handler: () => catalog(),
  }),
];
