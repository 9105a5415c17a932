import type { ResourceServer } from '../app.js';
import { MCP_DOOR, openMcpDoor } from './door.js';
import { toolRoutes } from './routes.js';
import { loadWhenAgentsRun } from './warm.js';

export const server: ResourceServer = {
  routes: toolRoutes,
  parts: [
    {
      // One SDK Server for every MCP client of this daemon, made at the first POST /mcp, or
      // earlier once the daemon has agents to run, which will call it (warm.ts).
      name: 'MCP',
      start: ({ app, checkResponses }) => {
        const door = app.services.provide(MCP_DOOR, openMcpDoor(app, { checkOutputs: checkResponses }));
        let closed = false;
        const stopWatching = loadWhenAgentsRun(app, async () => {
          const { openServer } = await import('./mcp.js');
          if (!closed) openServer(door);
        });
        return async () => {
          closed = true;
          stopWatching();
          await door.close();
        };
      },
    },
  ],
};
