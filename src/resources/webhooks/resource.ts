import type { AppResource } from '../../app.js';
import { migration as m006 } from './migrations/006-webhooks.js';
import { migration as m012 } from './migrations/012-deliveries-per-webhook.js';
import { migration as m014 } from './migrations/014-delivery-claim-lease.js';

export const webhooksResource: AppResource = {
  name: 'webhooks',
  commands: [
    { name: 'webhooks', summary: 'Signed HTTP deliveries of events, with a delivery log (and `listen` to receive them here)', load: async () => (await import('./command.js')).webhooksCommand() },
  ],
  endpoints: [
    { endpoint: 'PATCH /v1/webhooks/{id} {"enabled": true}', command: 'svc webhooks set {id} --enable' },
    { endpoint: 'POST /v1/webhooks/{id}/test', command: 'svc webhooks test {id}' },
  ],
  events: ['webhook'],
  tables: ['webhooks', 'webhook_secrets', 'webhook_deliveries', 'webhook_attempts'],
  migrations: [m006, m012, m014],
  server: async () => (await import('./server.js')).server,
};
