import type { ResourceServer } from '../../app.js';
import { TaskHooks, TASK_HOOKS } from './hooks.js';
import { LEASE_REAPER, startLeaseReaper } from './lease-reaper.js';
import { taskRoutes } from './routes.js';
import { ClaimOut, CommentOut, LeaseOut, NextOut } from './schema.js';

export const server: ResourceServer = {
  routes: taskRoutes,
  schemaNames: { Lease: LeaseOut, TaskComment: CommentOut, ClaimedTask: ClaimOut, NextTask: NextOut },
  wire: (app) => {
    // Missions and approvals hook into the tasks' moves (their wire()).
    app.services.provide(TASK_HOOKS, new TaskHooks());
  },
  parts: [
    {
      // Claims are leases: release tasks whose holder stopped sending heartbeats (also while we were down).
      name: 'lease reaper',
      start: async ({ app }) => {
        const reaper = app.services.provide(LEASE_REAPER, await startLeaseReaper(app));
        return () => reaper.close();
      },
    },
  ],
};
