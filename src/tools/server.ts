import type { ResourceServer } from '../app.js';
import { MCP_DOOR, openMcpDoor } from './door.js';
import { toolRoutes } from './routes.js';

export const server: ResourceServer = {
  routes: toolRoutes,
  parts: [
    {
      // One SDK Server for every MCP client of this daemon, made at the first POST /mcp.
      name: 'MCP',
      start: ({ app, checkResponses }) => {
        const door = app.services.provide(MCP_DOOR, openMcpDoor(app, { checkOutputs: checkResponses }));
        return () => door.close();
      },
    },
  ],
};
