import type { ResourceServer } from '../../app.js';
import { systemRoutes } from './routes.js';

// Presence on a shared state and the setup report are the daemon's facts: its parts provide them (src/parts/).

export const server: ResourceServer = { routes: systemRoutes };
