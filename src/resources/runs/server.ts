import type { ResourceServer } from '../../app.js';
import { RUNTIME_CHECK } from '../agents/service.js';
import { WAITING_RUNS } from '../providers/service.js';
import { runRoutes } from './routes.js';
import { checkRuntime, waitingRunsByProvider } from './service.js';

// The runner itself is one of the daemon's parts (src/parts/announce.ts): it starts once the daemon listens.

export const server: ResourceServer = {
  routes: runRoutes,
  wire: (app) => {
    // An agent's runtime is checked by the runs resource.
    app.services.provide(RUNTIME_CHECK, checkRuntime);
    // GET /auth/status says how many runs wait for a paused provider: the runs resource counts them.
    app.services.provide(WAITING_RUNS, waitingRunsByProvider);
  },
};
