// Which claimed deliveries go on the wire, and how many due ones a webhook claims. Pure: the worker
// passes what it holds, so every decision is tested without a network or a clock.
//
// The worker has `concurrency` slots. One webhook (an endpoint) may hold at most `perEndpoint` of
// them, so a receiver that hangs keeps its own deliveries waiting and never the others'. Free slots
// go to the webhook with the fewest deliveries on the wire. Each webhook claims for itself, up to
// PREFETCH_FACTOR × its slots, so one webhook's backlog never fills the queue either.

export interface SlotLimits {
  concurrency: number;
  perEndpoint: number;
}

/** A webhook keeps claimed rows ready beyond its slots, so claiming is one transaction per batch, not per delivery. */
export const PREFETCH_FACTOR = 2;

/** A webhook's slots: never more than the worker's. */
export const endpointSlots = (l: SlotLimits): number => Math.max(1, Math.min(l.perEndpoint, l.concurrency));

/** What the worker holds of one webhook: deliveries on the wire, and claimed ones waiting to start. */
export interface Held {
  active: number;
  queued: number;
}

/**
 * The position in `queue` of the claimed delivery to start next, or -1 when none may start (every
 * slot taken, or every queued delivery's webhook at its limit). Among webhooks under their limit,
 * the one with the fewest deliveries on the wire goes first; ties go to the earlier in the queue.
 */
export function nextStart(queue: readonly { webhookId: string }[], active: ReadonlyMap<string, number>, activeTotal: number, limits: SlotLimits): number {
  if (activeTotal >= limits.concurrency) return -1;
  const cap = endpointSlots(limits);
  let best = -1;
  let bestActive = cap;
  for (let i = 0; i < queue.length; i++) {
    const a = active.get(queue[i]!.webhookId) ?? 0;
    if (a < bestActive) {
      best = i;
      bestActive = a;
      if (a === 0) break;
    }
  }
  return best;
}

/**
 * How many of a webhook's due deliveries to claim now; 0 = none. It claims up to what it may hold
 * (PREFETCH_FACTOR × its slots): at once when one of its slots would otherwise sit idle, else only
 * once a whole batch (its slots' worth) fits.
 */
export function claimWant(held: Held, freeSlots: number, limits: SlotLimits): number {
  const slots = endpointSlots(limits);
  const room = slots * PREFETCH_FACTOR - held.active - held.queued;
  if (room <= 0) return 0;
  if (held.queued === 0 && held.active < slots && freeSlots > 0) return room;
  return room >= slots ? room : 0;
}

/** A webhook with pending deliveries: when its oldest one not on the wire is due (epoch ms). */
export interface DueHead {
  webhookId: string;
  dueAt: number;
}

/** When to look again for deliveries that are not due yet (epoch ms), or null when none is waiting. */
export function nextWake(heads: readonly DueHead[], now: number): number | null {
  let at: number | null = null;
  for (const h of heads) if (h.dueAt > now && (at === null || h.dueAt < at)) at = h.dueAt;
  return at;
}
