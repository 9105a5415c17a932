import { serviceKey, type ResourceServer } from '../../app.js';
import { webhookRoutes } from './routes.js';
import { DeliveryDetailOut, DeliveryOut, RecoverOut, RotateOut, WebhookCreated, WebhookOut } from './schema.js';
import { enqueueDeliveries, noDeliveries, pruneDeliveries, subscriptions, webhookSecrets, WEBHOOKS } from './service.js';
import { DeliveryWorker, type WorkerOptions } from './worker.js';

/** The worker's seams a test passes to startDaemon (a resolver, a jitter source); provided by the daemon. */
export const WORKER_OPTIONS = serviceKey<WorkerOptions>('webhooks.workerOptions');
const WORKER = serviceKey<DeliveryWorker>('webhooks.worker');

export const server: ResourceServer = {
  routes: webhookRoutes,
  schemaNames: {
    Webhook: WebhookOut,
    WebhookCreated,
    WebhookDelivery: DeliveryOut,
    WebhookDeliveryDetail: DeliveryDetailOut,
    WebhookSecretRotation: RotateOut,
    WebhookRecovery: RecoverOut,
  },
  wire: async (app) => {
    // Delivery rows are written by the sink inside each event's transaction, so the worker exists
    // before anything can write an event; it starts sending with the other parts (in-flight ones
    // from a crash first), and closes after them.
    const worker = app.services.provide(WORKER, await DeliveryWorker.open(app, app.services.get(WORKER_OPTIONS)));
    app.services.provide(WEBHOOKS, worker);
    return () => worker.close();
  },
  parts: [{ name: 'webhook deliveries', start: ({ app }) => app.services.get(WORKER).start() }],
  sink: enqueueDeliveries,
  readAhead: subscriptions,
  quiet: noDeliveries,
  prune: [{ name: 'webhook deliveries', run: pruneDeliveries }],
  secrets: webhookSecrets,
};
