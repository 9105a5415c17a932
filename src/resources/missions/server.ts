import type { ResourceServer } from '../../app.js';
import { TASK_HOOKS } from '../tasks/hooks.js';
import { missionRoutes } from './routes.js';
import { wireMissions } from './service.js';

export const server: ResourceServer = {
  routes: missionRoutes,
  // A mission's tasks follow its state; tasks decide its completion.
  wire: (app) => wireMissions(app.services.get(TASK_HOOKS)),
};
