import { createHmac, randomBytes } from 'node:crypto';

// How a delivery is signed. Two schemes side by side, each with one signature per live secret:
//  - the reference's: X-Service-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>"> keyed with
//    the secret string's UTF-8 bytes (several v1= during a rotation's grace window, as Stripe does);
//  - Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature: "v1,<base64>" (space
//    separated) over "<id>.<t>.<body>", keyed with the base64-decoded part after "whsec_".

export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: whsec_ + base64 of 32 random bytes. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** The reference's v1: hex HMAC-SHA256 of "<t>.<body>" keyed with the secret string itself. */
export function serviceSignature(secret: string, t: number, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
}

/** Standard Webhooks v1: base64 HMAC-SHA256 of "<id>.<t>.<body>" keyed with the decoded secret. */
export function standardSignature(secret: string, id: string, t: number, body: string | Buffer): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  return createHmac('sha256', key).update(`${id}.${t}.`).update(body).digest('base64');
}

/** Every header of a delivery, signed with each live secret (current first). */
export function deliveryHeaders(o: { deliveryId: string; event: string; body: string; secrets: string[]; t: number }): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'svc-webhooks/1',
    'x-service-event': o.event,
    'x-service-delivery-id': o.deliveryId,
    'x-service-signature': [`t=${o.t}`, ...o.secrets.map((s) => `v1=${serviceSignature(s, o.t, o.body)}`)].join(','),
    'webhook-id': o.deliveryId,
    'webhook-timestamp': String(o.t),
    'webhook-signature': o.secrets.map((s) => `v1,${standardSignature(s, o.deliveryId, o.t, o.body)}`).join(' '),
  };
}
