import type { ResourceServer } from '../../app.js';
import { boardRoutes } from './routes.js';

// Its files and its session cookies (a second way to authenticate) are the daemon's "board" part.

export const server: ResourceServer = { routes: boardRoutes };
