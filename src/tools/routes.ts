import { z } from 'zod';
import { route } from '../app.js';
import { RAW_RESPONSE } from '../kernel/route.js';
import { MCP_DOOR } from './door.js';

// The agent tools' door on the daemon: MCP Streamable HTTP at /mcp, behind the same bearer keys
// and Host/Origin guards as every other route (the kernel checks them before the handler runs).
// Stateless, so the transport needs no GET stream and no DELETE: the router answers those 405.

export const toolRoutes = [
  route({
    method: 'POST',
    path: '/mcp',
    operationId: 'mcp',
    summary: 'MCP (Model Context Protocol) Streamable HTTP endpoint: the agent tools (docs/mcp.md)',
    description:
      'JSON-RPC 2.0 messages per the MCP Streamable HTTP transport (stateless: no Mcp-Session-Id; answers are application/json, 202 for notifications). Send Accept: application/json, text/event-stream. A key with tools: "read" lists and calls only read-only tools.',
    tag: 'Agent tools',
    rawContentType: 'application/json',
    body: z.unknown().describe('A JSON-RPC request, notification or batch.'),
    response: z.unknown(),
    handler: async ({ app, principal, req, res, body }) => {
      // The MCP SDK comes with the first call (door.ts).
      const { handleMcp } = await import('./mcp.js');
      await handleMcp(app.services.get(MCP_DOOR), principal, req, res, body);
      return RAW_RESPONSE;
    },
  }),
];
