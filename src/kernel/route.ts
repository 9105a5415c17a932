import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import type { Principal } from './auth.js';
import { ERRORS, type ErrorCode } from './errors.js';

// A route is data: one object holds everything the router, the validator, the handler types and
// the OpenAPI builder need. Handlers return the `data` payload; the kernel wraps the envelope.

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

type Schema = z.ZodType;
type Out<S> = S extends Schema ? z.output<S> : undefined;
type In<S> = S extends Schema ? z.input<S> : undefined;

export interface HandlerContext<App, P, Q, B> {
  app: App;
  params: Out<P>;
  query: Out<Q>;
  body: Out<B>;
  principal: Principal | null;
  requestId: string;
  req: IncomingMessage;
  res: ServerResponse;
  /** Adds a response header (e.g. X-Next-Cursor) to the success response. */
  setHeader(name: string, value: string): void;
  /** Overrides the route's success status for this response (e.g. 202 instead of 201). */
  setStatus(status: number): void;
}

/** Returned by a handler that wrote the response itself (the SSE stream). */
export const RAW_RESPONSE = Symbol('raw-response');

/**
 * A success payload already serialised as JSON elsewhere (a data worker): the kernel writes its
 * bytes into the envelope as they are. An 8 MiB answer parsed and serialised again on the event
 * loop cost about 100 ms, during which no other request was answered.
 */
export class JsonText {
  constructor(readonly bytes: Uint8Array) {}
}

export interface RouteDef<App, P extends Schema | undefined, Q extends Schema | undefined, B extends Schema | undefined, R extends Schema> {
  method: Method;
  /** OpenAPI-style template: /api/v1/agents/{name} */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  /** 'key' (default) needs a bearer key; 'public' needs none. */
  auth?: 'key' | 'public';
  /**
   * 'full' (default): only full-access keys. 'data': keys with grants may call it too, and the
   * handler checks their grants for the database named (DESIGN section 4).
   */
  scope?: 'full' | 'data';
  params?: P;
  query?: Q;
  body?: B;
  /** Schema of `data` in the success envelope. */
  response: R;
  /** Success status, 200 unless said. */
  status?: number;
  /** Content type of a response the handler streams itself (documented, not enveloped). */
  rawContentType?: string;
  description?: string;
  /**
   * The streamed answer of a route that streams when asked (`stream: true`): Server-Sent Events,
   * documented as the success status's `text/event-stream` content beside its JSON answer.
   */
  stream?: StreamDef;
  /**
   * The error format of this route's failures for clients that expect another one than the
   * envelope (the OpenAI one on /v1/chat/completions; see errorFormat). The one error writer
   * applies it to every failure on the route's path, the kernel's own included (the Host and
   * Origin guards, 405, auth, body and validation errors), and the OpenAPI document declares each
   * error response of the route with its schema.
   */
  errorBody?: ErrorFormat;
  /**
   * Error codes the handler itself may answer (404 not_found, 409 conflict, 422 unprocessable...).
   * The kernel adds the ones it answers for every route (see routeErrors); the OpenAPI document
   * declares the union, and in tests an answer with an undeclared status fails the request.
   */
  errors?: ErrorCode[];
  /** Request headers the handler reads, documented as header parameters (the kernel does not validate them). */
  requestHeaders?: { name: string; description: string; schema: Schema }[];
  handler(ctx: HandlerContext<App, P, Q, B>): In<R> | JsonText | typeof RAW_RESPONSE | Promise<In<R> | JsonText | typeof RAW_RESPONSE>;
}

/** What the one error writer knows of a failure, handed to a route's error format. */
export interface ErrorFields {
  status: number;
  code: string;
  message: string;
  details?: unknown;
}

/**
 * An error format other than the envelope: the body a failure is answered with, made from its
 * fields, with the schema of that body and the words that document it.
 */
export interface ErrorFormat {
  (error: ErrorFields): unknown;
  /**
   * Names the format's OpenAPI components: the schema `<id>Error`, the error responses `<id><Codes>`
   * (OpenAiUnauthorized) and `<id>MethodNotAllowed`. Give the schema itself no `.meta({ id })`.
   */
  readonly id: string;
  /** The schema of every body the format makes. */
  readonly schema: Schema;
  /** Opens the description of each of its error responses. */
  readonly description: string;
}

/** An error format from its parts; `format` must make bodies that `schema` accepts (checked in tests). */
export function errorFormat(def: { id: string; schema: Schema; description: string; format(error: ErrorFields): unknown }): ErrorFormat {
  if (!/^[A-Z][A-Za-z0-9]*$/.test(def.id)) throw new Error(`error format id ${def.id} must be PascalCase`);
  return Object.assign((error: ErrorFields) => def.format(error), { id: def.id, schema: def.schema, description: def.description });
}

/** The error format every route of a path shares, which is the path's own (undefined: the envelope). */
export function sharedErrorFormat(routes: readonly { errorBody?: ErrorFormat }[]): ErrorFormat | undefined {
  const first = routes[0]?.errorBody;
  return routes.every((r) => r.errorBody === first) ? first : undefined;
}

/** A Server-Sent Events answer: what each event's `data:` holds, and the literal the last one holds. */
export interface StreamDef {
  /** The schema of one event's `data:` (JSON). */
  data: Schema;
  /** The `data:` of the last event, when the stream ends with one (`[DONE]`). */
  done?: string;
  /** When the route streams, and how the events come. */
  description: string;
}

// Erased form the router stores; the typed form only exists where a route is written.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute<App> = RouteDef<App, any, any, any, any>;

/** Returns a `route()` helper bound to the application context type, so handlers see `ctx.app` typed. */
export function routeDefiner<App>() {
  return function route<R extends Schema, P extends Schema | undefined = undefined, Q extends Schema | undefined = undefined, B extends Schema | undefined = undefined>(
    def: RouteDef<App, P, Q, B, R>,
  ): AnyRoute<App> {
    return def as AnyRoute<App>;
  };
}

/**
 * Every error code a route can answer: what the kernel answers for any route (a bad request,
 * the Host/Origin guards, an unknown key and the failed-auth limiter, a body too large or not
 * JSON where a body is read, an unknown path parameter's resource) plus what the route declares.
 */
export function routeErrors(route: AnyRoute<unknown>): ErrorCode[] {
  const codes = new Set<ErrorCode>(['invalid_request', 'forbidden']);
  if (route.auth !== 'public') {
    codes.add('unauthorized');
    codes.add('rate_limited');
  }
  if (route.params) codes.add('not_found');
  if (route.body) {
    codes.add('payload_too_large');
    codes.add('unsupported_media_type');
  }
  for (const c of route.errors ?? []) codes.add(c);
  codes.add('internal');
  return [...codes].sort((a, b) => ERRORS[a].status - ERRORS[b].status);
}
