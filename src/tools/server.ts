import type { ResourceServer } from '../app.js';
import { MCP_DOOR, startMcp } from './mcp.js';
import { toolRoutes } from './routes.js';

export const server: ResourceServer = {
  routes: toolRoutes,
  parts: [
    {
      // One SDK Server for every MCP client of this daemon.
      name: 'MCP',
      start: async ({ app, checkResponses }) => {
        const door = app.services.provide(MCP_DOOR, await startMcp(app, { checkOutputs: checkResponses }));
        return () => door.close();
      },
    },
  ],
};
