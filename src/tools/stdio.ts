import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { isJSONRPCRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

// `svc mcp`: a stdio MCP server for agent tools that launch their servers as child processes. It
// holds no tools of its own: every message goes to the daemon's POST /mcp with the project's key
// and every answer comes back, so the tools, their checks and their events are the daemon's.

export interface StdioBridgeOptions {
  /** The daemon's base URL. */
  url: string;
  apiKey: string | undefined;
  /** Where diagnostics go (stderr: stdout belongs to the protocol). */
  warn(line: string): void;
  /** Looks for the daemon again (it may have restarted on another port); null when none runs. */
  relocate?(): string | null;
}

/** JSON-RPC "server error" range: the daemon could not be reached or refused us. */
const UNREACHABLE = -32000;

function explain(err: unknown, url: string): string {
  const code = (err as { code?: number }).code;
  if (code === 401) return `the svc daemon at ${url} refused the API key (401); check SERVICE_API_KEY or .svc/local.key`;
  if (code === 403) return `the svc daemon at ${url} refused the request (403): ${(err as Error).message}`;
  return `the svc daemon is not reachable at ${url} (${(err as Error).message}); start it in the project with \`svc serve\``;
}

export async function runStdioBridge(o: StdioBridgeOptions): Promise<void> {
  let url = o.url;
  const headers: Record<string, string> = o.apiKey ? { Authorization: `Bearer ${o.apiKey}` } : {};
  const local = new StdioServerTransport();
  let protocolVersion: string | undefined;
  const initializeIds = new Set<string | number>();

  const connect = (): StreamableHTTPClientTransport => {
    const t = new StreamableHTTPClientTransport(new URL('/mcp', url), { requestInit: { headers } });
    if (protocolVersion) t.setProtocolVersion(protocolVersion);
    t.onmessage = (msg) => {
      // The protocol version the daemon chose goes on every later request, as the spec asks.
      if ('id' in msg && msg.id !== undefined && initializeIds.delete(msg.id) && 'result' in msg) {
        protocolVersion = String((msg.result as { protocolVersion?: unknown }).protocolVersion ?? '') || undefined;
        if (protocolVersion) t.setProtocolVersion(protocolVersion);
      }
      void local.send(msg);
    };
    t.onerror = (err) => o.warn(`svc mcp: ${err.message}`);
    return t;
  };
  let upstream = connect();
  await upstream.start();

  async function forward(msg: JSONRPCMessage, retried = false): Promise<void> {
    try {
      await upstream.send(msg);
    } catch (err) {
      // The daemon may have restarted elsewhere: follow it once before giving up on this message.
      const moved = !retried && o.relocate?.();
      if (moved && moved !== url) {
        url = moved;
        o.warn(`svc mcp: the daemon moved; forwarding to ${url}`);
        await upstream.close().catch(() => undefined);
        upstream = connect();
        await upstream.start();
        return forward(msg, true);
      }
      const message = explain(err, url);
      o.warn(`svc mcp: ${message}`);
      if (isJSONRPCRequest(msg)) await local.send({ jsonrpc: '2.0', id: msg.id, error: { code: UNREACHABLE, message } });
    }
  }

  // Requests on their way to the daemon: when stdin closes (a client that writes its requests and
  // closes, `… | svc mcp`), each still gets its answer before the connection to the daemon closes.
  const pending = new Set<Promise<void>>();
  await new Promise<void>((resolve) => {
    local.onmessage = (msg) => {
      if (isJSONRPCRequest(msg) && msg.method === 'initialize') initializeIds.add(msg.id);
      const p: Promise<void> = forward(msg).finally(() => pending.delete(p));
      pending.add(p);
    };
    local.onerror = (err) => o.warn(`svc mcp: ${err.message}`);
    local.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
    void local.start();
  });
  while (pending.size) await Promise.allSettled([...pending]);
  await upstream.close().catch(() => undefined);
}
