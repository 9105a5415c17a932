import type { ResourceServer } from '../../app.js';
import { routineRoutes } from './routes.js';
import { pruneRoutineWork } from './service.js';
import { ROUTINE_WORKER, routineWorker } from './worker.js';

/** How long the chain of routines that created a task or mission is remembered (docs/routines.md, loops). */
const ROUTINE_WORK_DAYS = 30;

export const server: ResourceServer = {
  routes: routineRoutes,
  wire: (app) => {
    // Triggers hear events from here on, before any part writes one.
    const worker = app.services.provide(ROUTINE_WORKER, routineWorker(app));
    return () => worker.close();
  },
  parts: [
    {
      // Schedules on the daemon's clock (missed firings caught up now).
      name: 'routines',
      start: ({ app }) => app.services.get(ROUTINE_WORKER).start(),
    },
  ],
  prune: [{ name: 'routine work', run: (app, batch) => pruneRoutineWork(app, new Date(app.clock.now() - ROUTINE_WORK_DAYS * 86_400_000).toISOString(), batch) }],
};
