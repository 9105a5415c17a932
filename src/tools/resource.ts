import type { AppResource } from '../app.js';

// The agent tools' doors: MCP over HTTP (POST /mcp); `svc mcp` on stdio is the CLI's (src/cli/mcp-command.ts). The tools themselves
// are one list (index.ts), in the order clients list them.

export const toolsResource: AppResource = {
  name: 'tools',
  server: async () => (await import('./server.js')).server,
};
