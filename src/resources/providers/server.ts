import type { ResourceServer } from '../../app.js';
import { RECENT_FAILURES, RecentFailures } from './failures.js';
import { providerRoutes } from './routes.js';
import { AuthStatusOut, ProviderStatusOut } from './schema.js';
import { providerKeys } from './service.js';

export const server: ResourceServer = {
  routes: providerRoutes,
  schemaNames: { AuthStatus: AuthStatusOut, ProviderStatus: ProviderStatusOut },
  wire: (app) => {
    // Which requests failed lately, where: a provider's failures from a request's.
    app.services.provide(RECENT_FAILURES, new RecentFailures());
  },
  secrets: providerKeys,
};
