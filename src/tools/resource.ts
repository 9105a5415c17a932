import type { AppResource } from '../app.js';

// The agent tools' doors: MCP over HTTP (POST /mcp) and `svc mcp` on stdio. The tools themselves
// are one list (index.ts), in the order clients list them.

export const toolsResource: AppResource = {
  name: 'tools',
  commands: [{ name: 'mcp', summary: 'MCP server on stdio for agent tools, forwarding to the daemon (--print-config for HTTP)', load: async () => (await import('./command.js')).mcpCommand() }],
  server: async () => (await import('./server.js')).server,
};
