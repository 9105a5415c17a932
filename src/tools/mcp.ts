import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { App } from '../app.js';
import type { Principal } from '../kernel/auth.js';
import { errorFields } from '../kernel/log.js';
import { findTool, mayUse, runTool, TOOLS, toolJsonSchema, type AnyTool, type ToolResult } from './index.js';

// The registry served over MCP with the official SDK's low-level Server (not McpServer: we list
// per key, keep our own zod 4 schemas and shape errors ourselves) and its Streamable HTTP
// transport in stateless JSON mode: every POST /mcp is complete in itself, so the daemon keeps no
// session state a client could pile up, and a restart breaks no client.

/** The MCP listing of a tool, computed once: schemas do not change while the daemon runs. */
const listings = new Map<string, Tool>(
  TOOLS.map((t): [string, Tool] => [
    t.name,
    {
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: toolJsonSchema(t.input, 'input') as Tool['inputSchema'],
      outputSchema: toolJsonSchema(t.output, 'output') as Tool['outputSchema'],
      annotations: { title: t.title, ...t.annotations, openWorldHint: false },
    },
  ]),
);

export const toolListing = (t: AnyTool): Tool => listings.get(t.name)!;

/**
 * A tool result in MCP's shape: structuredContent matching the output schema plus a short text;
 * the JSON again as a second text block (the spec's advice for clients that ignore
 * structuredContent). A failure is a tool error (isError) carrying our error code and message, so
 * the model can read it and correct itself; the session goes on.
 */
export function toCallToolResult(r: ToolResult): CallToolResult {
  if (r.ok) return { structuredContent: r.structured, content: [{ type: 'text', text: r.text }, { type: 'text', text: JSON.stringify(r.structured) }] };
  const details = r.details?.length ? '\n' + r.details.map((d) => `- ${d.path}: ${d.message}`).join('\n') : '';
  return {
    isError: true,
    content: [{ type: 'text', text: `Error ${r.code} (${r.status}): ${r.message}${details}` }],
    _meta: { 'svc/error': { code: r.code, status: r.status, message: r.message, ...(r.details ? { details: r.details } : {}) } },
  };
}

function mcpServer(app: App, principal: Principal | null, requestId: string): Server {
  const server = new Server({ name: 'svc', title: 'svc task board', version: app.version }, { capabilities: { tools: { listChanged: false } } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS.filter((t) => mayUse(principal, t)).map(toolListing) }));
  server.setRequestHandler(CallToolRequestSchema, (req) => {
    const tool = findTool(req.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}. tools/list names the tools this key may call.`);
    try {
      return toCallToolResult(runTool(tool, { app, principal }, req.params.arguments));
    } catch (err) {
      app.log.error('tool call failed', { id: requestId, tool: tool.name, ...errorFields(err) });
      return toCallToolResult({ ok: false, code: 'internal', status: 500, message: 'Internal error.' });
    }
  });
  return server;
}

/** Answers one POST /mcp (JSON-RPC message or batch) that the kernel has authenticated and read. */
export async function handleMcp(app: App, principal: Principal | null, requestId: string, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
  const server = mcpServer(app, principal, requestId);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}
