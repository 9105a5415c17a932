import type { ResourceServer } from '../../app.js';
import { systemRoutes } from './routes.js';

// The daemon's own parts (presence on a shared state, setup) are wired in src/daemon.ts: they are the daemon's facts.

export const server: ResourceServer = { routes: systemRoutes };
