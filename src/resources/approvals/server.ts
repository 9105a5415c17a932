import type { ResourceServer } from '../../app.js';
import { TASK_HOOKS } from '../tasks/hooks.js';
import { startPermissionSweeper } from './permissions.js';
import { approvalRoutes } from './routes.js';
import { wireApprovals } from './service.js';
import { startApprovalTimeouts } from './timeouts.js';

export const server: ResourceServer = {
  routes: approvalRoutes,
  // A task waiting for approval leaves only through the decision.
  wire: (app) => wireApprovals(app.services.get(TASK_HOOKS)),
  parts: [
    {
      name: 'approval timeouts',
      start: async ({ app }) => {
        const timeouts = await startApprovalTimeouts(app);
        return () => timeouts.close();
      },
    },
    {
      // A run that ends leaves no permission request of its task waiting (a lost one is asked again).
      name: 'permission sweeper',
      start: ({ app }) => {
        const sweeper = startPermissionSweeper(app);
        return () => sweeper.close();
      },
    },
  ],
};
