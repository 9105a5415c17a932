import { z } from 'zod';
import { CATEGORIES, isEventName } from '../../events/registry.js';
import { Timestamp } from '../common.js';
import { urlProblem } from './target.js';

export const MAX_PATTERNS = 64;
/** Rotation grace window: default a day (as DESIGN says), at most a week. */
export const DEFAULT_GRACE_SECONDS = 86_400;
export const MAX_GRACE_SECONDS = 7 * 86_400;

/** Why a pattern is not `*`, `<category>:*` or an exact event name of the catalog, or null. */
export function patternProblem(p: string): string | null {
  if (p === '*') return null;
  if (!/^[a-z][a-z_]*:(\*|[a-z][a-z_]*)$/.test(p)) return `"${p}" is not a pattern: use "*", "<category>:*" or an event name such as "task:created"`;
  const [cat, action] = p.split(':') as [string, string];
  if (!Object.hasOwn(CATEGORIES, cat)) return `unknown event category "${cat}" (see GET /v1/events/catalog)`;
  if (action !== '*' && !isEventName(p)) return `unknown event "${p}" (see GET /v1/events/catalog)`;
  return null;
}

const WebhookUrl = z
  .string()
  .max(2048)
  .superRefine((v, ctx) => {
    const why = urlProblem(v);
    if (why) ctx.addIssue({ code: 'custom', message: why });
  })
  .describe('http:// or https:// URL. Loopback and private addresses are allowed; link-local, multicast and unspecified are not.');

const Patterns = z
  .array(z.string().max(128))
  .min(1)
  .max(MAX_PATTERNS)
  .superRefine((list, ctx) => {
    list.forEach((p, i) => {
      const why = patternProblem(p);
      if (why) ctx.addIssue({ code: 'custom', path: [i], message: why });
    });
  })
  .describe('Event patterns: "*", "<category>:*" (e.g. "task:*") or exact event names.');

const Description = z.string().max(1000);

export const WebhookIn = z.strictObject({
  url: WebhookUrl,
  events: Patterns.optional().describe('Default ["*"].'),
  description: Description.optional(),
});
export type WebhookInput = z.output<typeof WebhookIn>;

export const WebhookPatch = z.strictObject({
  url: WebhookUrl.optional(),
  events: Patterns.optional(),
  description: Description.nullable().optional(),
  enabled: z.boolean().optional().describe('false stops deliveries (pending ones fail); true resumes them for new events.'),
});
export type WebhookPatchInput = z.output<typeof WebhookPatch>;

export const RotateIn = z.strictObject({
  graceSeconds: z.int().min(0).max(MAX_GRACE_SECONDS).optional().describe('How long the old secret keeps signing beside the new one (default 86400; 0 = retire it now).'),
});

export const RecoverIn = z.strictObject({
  since: z.iso.datetime().describe('Re-send every delivery that failed at or after this time (ISO 8601).'),
});

export const WebhookIdParam = z.strictObject({ id: z.string().min(1).max(128) });
export const DeliveryIdParam = z.strictObject({ id: z.string().min(1).max(128), deliveryId: z.string().min(1).max(128) });

export const DeliveryListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Page size, 1..200 (default 50).'),
  before: z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a delivery id')
    .optional()
    .describe('Only deliveries older than this delivery id (the last id of the previous page; also in X-Next-Cursor).'),
});

export const WebhookOut = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string().nullable(),
  enabled: z.boolean(),
  disabledReason: z.string().nullable().describe('Why the webhook is disabled (410 Gone, or by hand); null while enabled.'),
  secretRotatedAt: Timestamp.nullable().describe('When the secret was last rotated; null if never.'),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Webhook = z.output<typeof WebhookOut>;

export const WebhookCreated = WebhookOut.extend({
  secret: z.string().describe('whsec_ + base64 of 32 random bytes. Shown only in this answer: store it.'),
});

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;

export const DeliveryOut = z.object({
  id: z.string().describe('The delivery id: X-Service-Delivery-Id and webhook-id. The same on every attempt, so receivers can de-duplicate.'),
  webhookId: z.string(),
  event: z.string(),
  eventId: z.int().describe('The event sequence number (the SSE id).'),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.int(),
  lastStatusCode: z.int().nullable(),
  lastError: z.string().nullable(),
  nextAttemptAt: Timestamp.nullable().describe('When the next attempt is due; null once the delivery is settled.'),
  redeliveryOf: z.string().nullable().describe('The delivery this one re-sends (redeliver, recover).'),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Delivery = z.output<typeof DeliveryOut>;

export const AttemptOut = z.object({
  n: z.int(),
  at: Timestamp,
  statusCode: z.int().nullable(),
  error: z.string().nullable().describe('Network error, deadline, refused target, or why a status is not a success.'),
  durationMs: z.int(),
  responseBody: z.string().nullable().describe('The first 1 KiB of the response body.'),
});
export type Attempt = z.output<typeof AttemptOut>;

export const DeliveryDetailOut = DeliveryOut.extend({
  body: z.string().describe('The exact JSON body sent (the envelope {event, data, timestamp}).'),
  attemptLog: z.array(AttemptOut).describe('Every attempt, oldest first (`attempts` is their count).'),
});
export type DeliveryDetail = z.output<typeof DeliveryDetailOut>;

export const RotateOut = z.object({ secret: z.string(), previousSecretExpiresAt: Timestamp.nullable() });
export const RecoverOut = z.object({ recovered: z.int().describe('How many failed deliveries were queued again.'), deliveryIds: z.array(z.string()) });
