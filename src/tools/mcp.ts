import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, SUPPORTED_PROTOCOL_VERSIONS, type CallToolResult, type JSONRPCMessage, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { SSE_HEADERS } from '../events/sse.js';
import type { Principal } from '../kernel/auth.js';
import type { Clock } from '../lib/clock.js';
import { errorFields } from '../kernel/log.js';
import { MCP_DOOR, type McpDoor } from './door.js';
import { findTool, mayUse, runTool, TOOLS, toolJsonSchema, type AnyTool, type ToolResult } from './index.js';

// The registry served over MCP: the official SDK's low-level Server (protocol, initialize,
// tools/list, tools/call, request validation) behind the Streamable HTTP POST exchange in stateless
// JSON mode. Every POST /mcp is complete in itself, so the daemon keeps no session state a client
// could pile up and a restart breaks no client. The SDK's own Node transport is not used: in
// stateless mode it needs a new Server and transport per request and converts each request to a
// Web Request through @hono/node-server, which measured at 0.1x the REST throughput (`npm run bench -- mcp`).

/** The MCP listing of a tool, computed once: schemas do not change while the daemon runs. */
const listings = new Map<string, Tool>(
  TOOLS.map((t): [string, Tool] => [
    t.name,
    {
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: toolJsonSchema(t.input, 'input') as Tool['inputSchema'],
      ...(t.textOnly ? {} : { outputSchema: toolJsonSchema(t.output, 'output') as Tool['outputSchema'] }),
      annotations: { title: t.title, ...t.annotations, openWorldHint: false },
    },
  ]),
);

export const toolListing = (t: AnyTool): Tool => listings.get(t.name)!;

/**
 * A tool result in MCP's shape: structuredContent matching the output schema plus a short text.
 * The JSON is not repeated as text: clients that understand structuredContent (Claude Code among
 * them) hand the model the JSON in place of the text, so a copy would only double every answer.
 * A failure is a tool error (isError) carrying our error code and message, so the model can read
 * it and correct itself; the session goes on.
 */
export function toCallToolResult(r: ToolResult, textOnly = false): CallToolResult {
  if (r.ok) return textOnly ? { content: [{ type: 'text', text: r.text }] } : { structuredContent: r.structured, content: [{ type: 'text', text: r.text }] };
  const details = r.details?.length ? '\n' + r.details.map((d) => `- ${d.path}: ${d.message}`).join('\n') : '';
  return {
    isError: true,
    content: [{ type: 'text', text: `Error ${r.code} (${r.status}): ${r.message}${details}` }],
    _meta: { 'svc/error': { code: r.code, status: r.status, message: r.message, ...(r.details ? { details: r.details } : {}) } },
  };
}

export { MCP_DOOR, type McpDoor };

const principalOf = (extra: { authInfo?: { extra?: Record<string, unknown> } }): Principal | null => (extra.authInfo?.extra?.principal as Principal | undefined) ?? null;

/**
 * A JSON-RPC error answered as it is. The SDK's McpError writes "MCP error -32602: " into its own
 * message, which then goes on the wire, and a client adds the same prefix again when it reads it.
 */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** How often a tool call that waits says so (MCP progress): Claude Code gives up on a call silent for 300 s. */
export const PROGRESS_EVERY_MS = 20_000;

type CallAnswer = CallToolResult | Promise<CallToolResult>;

/**
 * Runs one tools/call for `principal`; unknown tools are a protocol error (the spec's choice). A
 * tool that waits answers a promise; `signal` tells it when the caller went away.
 */
function callTool(door: Pick<McpDoor, 'app' | 'checkOutputs'>, principal: Principal | null, name: string, args: unknown, signal?: AbortSignal): CallAnswer {
  const { app } = door;
  const tool = findTool(name);
  if (!tool) throw new RpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}. tools/list names the tools this key may call.`);
  const internal = (err: unknown): CallToolResult => {
    // A wait cut short by the caller hanging up is no failure of ours: nobody reads this answer.
    if (signal?.aborted) app.log.info('a tool call ended: its caller went away', { tool: tool.name });
    else app.log.error('tool call failed', { tool: tool.name, ...errorFields(err) });
    return toCallToolResult({ ok: false, code: 'internal', status: 500, message: 'Internal error.' });
  };
  try {
    const r = runTool(tool, { app, principal, checkOutput: door.checkOutputs, signal }, args);
    const answer = (result: ToolResult) => toCallToolResult(result, tool.textOnly);
    return r instanceof Promise ? r.then(answer, internal) : answer(r);
  } catch (err) {
    return internal(err);
  }
}

/**
 * The door's SDK Server, made and connected at the first request that reaches the door (the SDK
 * is loaded with this file, at the first POST /mcp). The transport is wired as connect() returns;
 * its start() does nothing.
 */
/** Makes the door's SDK Server and connects it, once (the first call, or warm.ts ahead of it). */
export function openServer(door: McpDoor): void {
  if (door.server) return;
  const { app, checkOutputs } = door;
  const server = new Server({ name: 'svc', title: 'svc task board', version: app.version }, { capabilities: { tools: { listChanged: false } } });
  server.setRequestHandler(ListToolsRequestSchema, (_req, extra) => {
    const principal = principalOf(extra);
    return { tools: TOOLS.filter((t) => mayUse(principal, t)).map(toolListing) };
  });
  server.setRequestHandler(CallToolRequestSchema, (req, extra) => callTool({ app, checkOutputs }, principalOf(extra), req.params.name, req.params.arguments, extra.signal));
  door.server = server;
  server.connect(door.transport).catch((err: unknown) => app.log.error('connecting the MCP server failed', errorFields(err)));
}

/**
 * tools/call, the one hot method, answered without the SDK's per-call machinery (it parses the
 * request twice and the result once more with its own zod schemas, which cost more than the tool):
 * the request is checked against the same CallToolRequestSchema shape by hand, the arguments by the
 * tool's own input schema, and the result is built by toCallToolResult as the SDK path builds it.
 * Anything that is not a well-formed tools/call goes through the SDK Server. A tool that waits
 * gives a promise of the answer.
 */
function fastCall(door: McpDoor, principal: Principal | null, m: JSONRPCMessage, signal?: AbortSignal): JSONRPCMessage | Promise<JSONRPCMessage> | null {
  const msg = m as { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown; _meta?: unknown; task?: unknown } };
  if (msg.method !== 'tools/call' || msg.id === undefined || typeof msg.params !== 'object' || msg.params === null) return null;
  const { name, arguments: args, task } = msg.params;
  if (typeof name !== 'string' || task !== undefined || (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args)))) return null;
  const id = msg.id as string | number;
  const answer = (result: CallToolResult) => ({ jsonrpc: '2.0', id, result }) as JSONRPCMessage;
  try {
    const result = callTool(door, principal, name, args ?? {}, signal);
    return result instanceof Promise ? result.then(answer) : answer(result);
  } catch (err) {
    const e = err instanceof RpcError ? err : new RpcError(ErrorCode.InternalError, 'Internal error.');
    return { jsonrpc: '2.0', id, error: { code: e.code, message: e.message } } as JSONRPCMessage;
  }
}

/** Whether a message calls a tool that waits (for a person). */
function waits(m: unknown): boolean {
  const name = (m as { params?: { name?: unknown } }).params?.name;
  return typeof name === 'string' && findTool(name)?.waits === true;
}

/** The progressToken a request asked its progress to be reported by, if any. */
function progressTokenOf(m: JSONRPCMessage): string | number | undefined {
  const meta = (m as { params?: { _meta?: unknown } }).params?._meta;
  const token = typeof meta === 'object' && meta !== null ? (meta as { progressToken?: unknown }).progressToken : undefined;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

/**
 * The answer of a call that waits, as the Streamable HTTP transport allows: an SSE stream that
 * opens at once, carries a progress notification every `everyMs` on the daemon's clock (or a
 * comment, when the client gave no progressToken) and ends with the answer. A client's HTTP stack
 * gives up on headers that do not come within minutes (Claude Code after 300 s), and its MCP client
 * on a call that says nothing as long; a person's decision may take longer.
 */
export async function streamAnswer(res: ServerResponse, answer: Promise<JSONRPCMessage>, progressToken: string | number | undefined, clock: Clock, everyMs = PROGRESS_EVERY_MS): Promise<void> {
  res.writeHead(200, SSE_HEADERS);
  const message = (m: unknown) => res.write(`event: message\ndata: ${JSON.stringify(m)}\n\n`);
  let progress = 0;
  let timer: unknown = null;
  const tick = (): void => {
    if (res.destroyed) return;
    if (progressToken === undefined) res.write(': waiting\n\n');
    else message({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken, progress: ++progress, message: 'waiting' } });
    timer = clock.setTimeout(tick, everyMs);
  };
  timer = clock.setTimeout(tick, everyMs);
  try {
    const m = await answer;
    if (!res.destroyed) message(m);
  } finally {
    clock.clearTimeout(timer);
    res.end();
  }
}

const rpcError = (code: number, message: string, id: unknown = null) => ({ jsonrpc: '2.0', id, error: { code, message } });

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status);
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

const isMessage = (m: unknown): m is JSONRPCMessage =>
  typeof m === 'object' &&
  m !== null &&
  !Array.isArray(m) &&
  (m as { jsonrpc?: unknown }).jsonrpc === '2.0' &&
  (typeof (m as { method?: unknown }).method === 'string' || 'result' in m || 'error' in m) &&
  ((m as { id?: unknown }).id === undefined || typeof (m as { id?: unknown }).id === 'string' || Number.isInteger((m as { id?: unknown }).id));

/**
 * One POST /mcp (a JSON-RPC message or a batch) that the kernel has authenticated and read, answered
 * per the Streamable HTTP transport: 200 with the JSON answers when it held requests, 202 when it
 * held only notifications or responses, 400/406 for what is not MCP.
 */
export async function handleMcp(door: McpDoor, principal: Principal | null, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
  openServer(door);
  const accept = req.headers.accept ?? '';
  if (!/application\/json|text\/event-stream|\*\/\*/.test(accept)) {
    return send(res, 406, rpcError(-32000, 'Not Acceptable: the client must accept application/json (and text/event-stream).'));
  }
  const version = req.headers['mcp-protocol-version'];
  if (typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    return send(res, 400, rpcError(-32000, `Unsupported MCP-Protocol-Version ${version}; supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}.`));
  }
  const batch = Array.isArray(body);
  const messages: unknown[] = batch ? body : [body];
  if (!messages.length || (batch && messages.length > 100) || !messages.every(isMessage)) {
    return send(res, 400, rpcError(-32600, 'Invalid Request: the body must be a JSON-RPC 2.0 message (or a batch of at most 100).'));
  }
  // A call that waits stops when the client hangs up (a CLI that was stopped): nobody is left to answer.
  const gone = new AbortController();
  const watchHangUp = () =>
    res.once('close', () => {
      if (!res.writableFinished) gone.abort(new Error('the MCP client closed the request'));
    });
  // The common case, one tools/call, is answered here; everything else through the SDK.
  if (!batch) {
    const fast = fastCall(door, principal, body as JSONRPCMessage, gone.signal);
    if (fast instanceof Promise) {
      if (waits(body)) {
        watchHangUp();
        if (/text\/event-stream/.test(accept)) return streamAnswer(res, fast, progressTokenOf(body as JSONRPCMessage), door.app.clock);
      }
      return send(res, 200, await fast);
    }
    if (fast) return send(res, 200, fast);
  }
  const authInfo = { token: '', clientId: principal?.name ?? 'daemon', scopes: [principal?.tools === 'read' ? 'tools:read' : 'tools:all'], extra: { principal } };
  let waiting = false;
  const pending = messages.map((m) => {
    const fast = fastCall(door, principal, m as JSONRPCMessage, gone.signal);
    waiting ||= fast instanceof Promise && waits(m);
    return fast ?? door.transport.exchange(m as JSONRPCMessage, authInfo);
  });
  if (waiting) watchHangUp();
  const answers = (await Promise.all(pending)).filter((a) => a !== null);
  if (!answers.length) return send(res, 202);
  send(res, 200, batch ? answers : answers[0]);
}
