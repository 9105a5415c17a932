import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';

/**
 * A transport for the SDK's Server that turns each HTTP POST into one exchange: the client's
 * messages go in, the answers to its requests come out. One Server and one of these serve every
 * client of a daemon at once: request ids are rewritten to ids unique to this transport on the way
 * in and restored on the way out, so two clients both sending id 1 never see each other's answers.
 */
export class ExchangeTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private seq = 0;
  private readonly waiting = new Map<number, { id: RequestId; resolve(message: JSONRPCMessage): void }>();

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.onclose?.();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    // Only answers go back: this stateless door offers no stream for server-initiated messages.
    if (!('id' in message) || typeof message.id !== 'number' || 'method' in message) return;
    const w = this.waiting.get(message.id);
    if (!w) return;
    this.waiting.delete(message.id);
    w.resolve({ ...message, id: w.id } as JSONRPCMessage);
  }

  /** Hands one client message to the Server; resolves with its answer, or null for a notification. */
  exchange(message: JSONRPCMessage, authInfo: AuthInfo): Promise<JSONRPCMessage | null> {
    if (!('method' in message)) return Promise.resolve(null); // a response from the client: nothing asked for one
    if (!('id' in message) || message.id === undefined) {
      this.onmessage?.(message, { authInfo });
      return Promise.resolve(null);
    }
    const inner = ++this.seq;
    return new Promise((resolve) => {
      this.waiting.set(inner, { id: message.id, resolve });
      this.onmessage?.({ ...message, id: inner }, { authInfo });
    });
  }
}
