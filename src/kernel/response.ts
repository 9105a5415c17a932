import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';
import type { Conn } from './connections.js';

/**
 * The kernel's response: X-Request-Id goes out first among the headers of every answer, whoever
 * writes the head (the kernel's JSON writer, a handler that streams, an implicit head), as when
 * it was set at the start of each request. Set then, it cost every JSON answer node's slower way
 * of writing a head (headers set one by one, then merged with those the head was given); now the
 * kernel's own answers give it with the rest of their head (writeJsonHead), and only a head that
 * another header came before pays for it.
 */
export class KernelResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** Set by the server as the request arrives. */
  requestId = '';
  /** When the request arrived (monotonic ms), for its log line. */
  startedAt = 0;
  /** The connection guard's entry for the request's connection, handed back when the response closes. */
  conn: Conn | undefined = undefined;
  private idWritten = false;

  /** Puts X-Request-Id in place before any other header. */
  private withId(): void {
    if (this.idWritten) return;
    this.idWritten = true;
    if (this.requestId) super.setHeader('X-Request-Id', this.requestId);
  }

  override setHeader(name: string, value: number | string | readonly string[]): this {
    this.withId();
    return super.setHeader(name, value);
  }

  override appendHeader(name: string, value: string | readonly string[]): this {
    this.withId();
    return super.appendHeader(name, value);
  }

  override writeHead(statusCode: number, statusMessage?: string, headers?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this;
  override writeHead(statusCode: number, headers?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this;
  override writeHead(...args: unknown[]): this {
    this.withId();
    return (super.writeHead as (...a: unknown[]) => this)(...args);
  }

  /**
   * X-Request-Id for the head of an answer the kernel writes itself, when nothing has written it
   * yet (then that head carries it, first); null when it is already set.
   */
  takeId(): string | null {
    if (this.idWritten) return null;
    this.idWritten = true;
    return this.requestId || null;
  }
}

const JSON_TYPE = 'application/json; charset=utf-8';

function isEmpty(o: Record<string, string>): boolean {
  for (const _ in o) return false;
  return true;
}

/**
 * The head of a JSON answer: X-Request-Id first (on a kernel response), the handler's headers, the
 * type and the length, given to node in one object (its quick way when no header was set before).
 */
export function writeJsonHead(res: ServerResponse, status: number, headers: Record<string, string>, length: number): void {
  const id = res instanceof KernelResponse ? res.takeId() : null;
  if (id === null) {
    res.writeHead(status, { ...headers, 'Content-Type': JSON_TYPE, 'Content-Length': length });
  } else if (isEmpty(headers)) {
    // Most answers carry no header of the handler's: their head is one literal object.
    res.writeHead(status, { 'X-Request-Id': id, 'Content-Type': JSON_TYPE, 'Content-Length': length });
  } else {
    res.writeHead(status, { 'X-Request-Id': id, ...headers, 'Content-Type': JSON_TYPE, 'Content-Length': length });
  }
}
