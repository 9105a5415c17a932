import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { StoredEvent } from '../../src/events/outbox.js';
import { noDeliveries } from '../../src/resources/webhooks/service.js';

// Whether the webhooks' sink has nothing to do for an event, given the subscriptions read ahead:
// only then may the event log send the event with its COMMIT (src/events/outbox.ts). It answers
// from the same matching as the sink (receiverOf in service.ts).

const app = { services: { get: () => ({ matchers: new Map() }) } } as unknown as App;
const ev = (name: string, data: Record<string, unknown> = {}) => ({ id: 0, name, data, timestamp: '' }) as StoredEvent;

describe('noDeliveries', () => {
  it('cannot say without the subscriptions', () => {
    expect(noDeliveries(app, ev('task:created'), undefined)).toBe(false);
  });
  it('is true with no webhook at all', () => {
    expect(noDeliveries(app, ev('task:created'), [])).toBe(true);
  });
  it('follows the patterns: exact names, a category, everything', () => {
    const hooks = (events: string[]) => [{ id: 'w1', events: JSON.stringify(events) }];
    expect(noDeliveries(app, ev('task:created'), hooks(['task:created']))).toBe(false);
    expect(noDeliveries(app, ev('task:transition'), hooks(['task:created']))).toBe(true);
    expect(noDeliveries(app, ev('task:transition'), hooks(['task:*']))).toBe(false);
    expect(noDeliveries(app, ev('agent:created'), hooks(['task:*']))).toBe(true);
    expect(noDeliveries(app, ev('agent:created'), hooks(['*']))).toBe(false);
  });
  it('webhook:test goes only to the webhook it names, whatever the patterns', () => {
    const hooks = [{ id: 'w1', events: JSON.stringify(['task:*']) }];
    expect(noDeliveries(app, ev('webhook:test', { webhookId: 'w1' }), hooks)).toBe(false);
    expect(noDeliveries(app, ev('webhook:test', { webhookId: 'w2' }), hooks)).toBe(true);
  });
});
