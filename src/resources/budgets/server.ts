import type { ResourceServer } from '../../app.js';
import { budgetRoutes } from './routes.js';

export const server: ResourceServer = { routes: budgetRoutes };
