import { serviceKey, type App } from '../app.js';
import { ExchangeTransport } from './exchange.js';

// The daemon's MCP door, without the MCP SDK: the SDK (its protocol schemas, some 20 MB and a
// fifth of the daemon's start-up) is loaded with the first POST /mcp (tools/routes.ts imports
// mcp.ts then), or once the daemon has an agent to run (warm.ts), and its Server made and
// connected to this transport there (mcp.ts openServer).

/** The daemon's MCP server: one SDK Server, connected to one exchange transport, for every client. */
export interface McpDoor {
  app: App;
  /** Check tool outputs against their schemas (tests). */
  checkOutputs: boolean;
  transport: ExchangeTransport;
  /** The SDK Server on `transport`, once a request has needed it (mcp.ts); null before. */
  server: { close(): Promise<void> } | null;
  close(): Promise<void>;
}

export const MCP_DOOR = serviceKey<McpDoor>('tools.mcp');

/** The door of a daemon that has not served MCP yet. */
export function openMcpDoor(app: App, opts: { checkOutputs?: boolean } = {}): McpDoor {
  const door: McpDoor = {
    app,
    checkOutputs: opts.checkOutputs ?? false,
    transport: new ExchangeTransport(),
    server: null,
    close: async () => {
      await door.server?.close();
    },
  };
  return door;
}
