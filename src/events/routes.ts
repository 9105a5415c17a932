import { z } from 'zod';
import { RAW_RESPONSE, routeDefiner } from '../kernel/route.js';
import { compileFilter } from './filter.js';
import { catalog } from './registry.js';
import { SSE_HEADERS, type SseHub } from './sse.js';

// events/ knows only the part of the daemon it needs, so it never depends on resources/ through App.
const route = routeDefiner<{ streams: SseHub }>();

const tag = 'Events';

const CatalogOut = z.array(
  z
    .object({
      category: z.string(),
      description: z.string(),
      events: z.array(z.object({ name: z.string(), description: z.string(), dataSchema: z.record(z.string(), z.unknown()) })),
    })
    .meta({ id: 'EventCategory' }),
);

export const eventRoutes = [
  route({
    method: 'GET',
    path: '/v1/events',
    operationId: 'streamEvents',
    summary: 'Live Server-Sent Events stream (bearer key or board session; Last-Event-ID replays the last 24 h)',
    description:
      'Frames carry `id` (the durable event sequence, never reset), `event` (the name) and `data` (JSON). ' +
      'A `: ping` comment is sent every 15 s. A client more than 1,000 events or 1 MiB behind, or whose connection ' +
      'accepts nothing for 30 s, is disconnected; reconnect with Last-Event-ID to resume. At most 32 streams per key ' +
      '(429 `rate_limited` beyond) and 256 in all (503 `unavailable`), both with Retry-After. A key in the query string is refused.',
    tag,
    query: z.strictObject({
      filter: z.string().max(2000).optional().describe('Comma-separated event names or prefixes: `task:,approval:`, `task:*`, `*`.'),
    }),
    rawContentType: 'text/event-stream',
    response: z.string(),
    errors: ['unavailable'],
    requestHeaders: [
      {
        name: 'Last-Event-ID',
        description:
          'The `id` of the last frame received: the stream first replays every later event still kept (24 h), then goes live. ' +
          'Events older than the retention window are announced in a comment. Anything but a decimal id is ignored.',
        schema: z.string(),
      },
    ],
    handler: async ({ app, query, req, res, principal }): Promise<typeof RAW_RESPONSE> => {
      const matches = compileFilter(query.filter);
      if (req.method === 'HEAD') {
        // The headers a stream would start with, and no stream: nothing is held open.
        res.writeHead(200, SSE_HEADERS);
        res.end();
        return RAW_RESPONSE;
      }
      const header = req.headers['last-event-id'];
      const lastEventId = typeof header === 'string' && /^\d{1,15}$/.test(header.trim()) ? Number(header.trim()) : undefined;
      await app.streams.open(res, { keyId: principal!.keyId, session: principal!.session, endsAt: principal!.sessionEndsAt, matches, lastEventId });
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
