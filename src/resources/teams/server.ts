import type { ResourceServer } from '../../app.js';
import { teamRoutes } from './routes.js';

export const server: ResourceServer = { routes: teamRoutes };
