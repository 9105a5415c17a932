import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:https';
import { isDeepStrictEqual } from 'node:util';
import type { z } from 'zod';
import { authenticateHeader, DigestCache, FailureLimiter, type KeyEntry, type Principal } from './auth.js';
import { hasNoBody, NO_BODY, readJsonBody } from './body.js';
import { connectionCapFor, DEFAULT_CONNECTION_LIMITS, guardConnections, readFileLimit, type ConnectionLimits, type ConnectionStats } from './connections.js';
import { AppError, ERRORS, toErrorResponse, type ErrorDetail } from './errors.js';
import { clientAddress } from './exposure.js';
import { HostCheck, originAllowed } from './guards.js';
import { errorFields, type Logger } from './log.js';
import { nulDetails } from './nul.js';
import { JsonText, RAW_RESPONSE, routeErrors, type AnyRoute } from './route.js';
import { Router } from './router.js';
import { KernelResponse, writeJsonHead } from './response.js';
import { queryParams, requestTarget } from './target.js';
import { monotonic, type Clock } from '../lib/clock.js';
import { uuidv7 } from '../lib/ids.js';
import { issueMessage } from '../lib/issue-message.js';

export interface HttpSettings {
  allowedHosts: string[];
  allowedOrigins: string[];
  maxBodyBytes: number;
  /** Open connections at most (project.json server.maxConnections); default: below the file limit. */
  maxConnections?: number;
  /** Addresses (IP or CIDR) of a reverse proxy whose X-Forwarded-For is believed. */
  trustedProxy?: readonly string[];
}

export interface HttpOptions<App> {
  app: App;
  routes: AnyRoute<App>[];
  /** Read on every request, so a project.json reload applies at once. */
  settings(): HttpSettings;
  keys(): readonly KeyEntry[];
  log: Logger;
  /** The daemon's clock: the failed-authentication limiter's windows run on it. */
  clock: Pick<Clock, 'now'>;
  /**
   * Check every success payload against the route's response schema, and every error against the
   * codes the route declares (on in tests: an undeclared answer becomes a 500 the test sees).
   */
  checkResponses?: boolean;
  limiter?: FailureLimiter;
  /** Connection bounds; maxConnections defaults to a cap below the process's file limit. */
  connections?: Partial<ConnectionLimits>;
  /** Serve HTTPS with this PEM pair (node:https); without it, plain HTTP exactly as before. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /**
   * A second way to authenticate, tried when a request carries no Authorization header: the
   * board's session cookie (resources/board, wired by the daemon's board part). Every request of a session
   * must carry its CSRF token, and a read-only session may only read.
   */
  session?(req: IncomingMessage): CookieSession | null | Promise<CookieSession | null>;
}

/** A request authenticated by a session cookie. */
export interface CookieSession {
  principal: Principal;
  /** The request carried the session's CSRF token (checked in constant time). */
  csrf: boolean;
  readOnly: boolean;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * An Origin that is the daemon's own (the board's pages): the scheme it serves and the Host the
 * request was sent to, which the Host guard has already accepted. A rebinding page's Host is
 * refused before this is asked.
 */
function sameOrigin(origin: string, host: string | undefined, scheme: 'http' | 'https'): boolean {
  return host !== undefined && origin.trim().toLowerCase() === `${scheme}://${host.toLowerCase()}`;
}

export interface HttpServer {
  /** node:http, or node:https when started with tls (its setSecureContext swaps the pair). */
  server: Server | TlsServer;
  /** The failed-authentication limiter this server answers 429 from. */
  limiter: FailureLimiter;
  /** Open connections and how often the cap was hit. */
  connections(): ConnectionStats;
  /** Stops accepting, lets in-flight requests finish (up to graceMs), then drops what is left. */
  close(graceMs: number): Promise<void>;
}

// Mcp-Protocol-Version: MCP clients in a browser (an allowed origin) send it on every request after initialize.
const CORS_HEADERS = 'Authorization, Content-Type, Last-Event-ID, X-Session-Id, X-Request-Id, Mcp-Protocol-Version';

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  writeJsonHead(res, status, headers, Buffer.byteLength(text));
  res.end(text);
}

const OK_HEAD = Buffer.from('{"ok":true,"data":');
const OK_TAIL = Buffer.from('}');

/** The success envelope around a payload serialised elsewhere: its bytes are copied, never parsed. */
function sendJsonText(res: ServerResponse, status: number, data: JsonText, headers: Record<string, string>): void {
  writeJsonHead(res, status, headers, OK_HEAD.length + data.bytes.byteLength + OK_TAIL.length);
  res.write(OK_HEAD);
  res.write(data.bytes);
  res.end(OK_TAIL);
}

/**
 * The one wording of a validation failure, REST's and the agent tools' alike: one line naming
 * each field at fault and why, and the same as details.
 */
export function invalidRequest(details: ErrorDetail[], code: 'invalid_request' | 'data_invalid' = 'invalid_request'): AppError {
  return new AppError(code, `Invalid request: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, { details });
}

/** What a zod error says, field by field; `where` is the request part (body, query) or the tool's input. */
export function zodDetails(where: string, error: z.ZodError): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const issue of error.issues) {
    const base = [where, ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) details.push({ path: `${base}.${key}`, message: 'Unknown property; it is not allowed here.' });
    } else {
      details.push({ path: base, message: issueMessage(issue) });
    }
  }
  return details;
}

function validate<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string, details: ErrorDetail[]): T {
  if (!schema) return undefined as T;
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  details.push(...zodDetails(where, r.error));
  return undefined as T;
}

function queryObject(query: string): Record<string, string | string[]> {
  // A Map, then own properties: `?__proto__=x` or `?constructor=x` is an unknown key like any other.
  const out = new Map<string, string | string[]>();
  for (const [k, v] of queryParams(query)) {
    const prev = out.get(k);
    out.set(k, prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v]);
  }
  return Object.fromEntries(out);
}

/** What `await` would wait for. */
const isThenable = (v: unknown): v is PromiseLike<unknown> => (typeof v === 'object' || typeof v === 'function') && v !== null && typeof (v as { then?: unknown }).then === 'function';

/** Whether a path parameter holds a NUL (then nulDetails says which). */
function holdsNul(params: Record<string, string>): boolean {
  for (const k in params) if (params[k]!.includes('\u0000')) return true;
  return false;
}

const isEmptyObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;

/**
 * In tests every success payload is checked against its route's response schema, and must not
 * carry fields the schema does not declare: the payload is sent as the handler returned it, so a
 * stray field (a secret, a raw column) would otherwise reach clients while the docs never show it.
 */
function checkResponse<App>(route: AnyRoute<App>, data: unknown): void {
  const r = route.response.safeParse(data);
  if (!r.success) throw new Error(`response of ${route.operationId} does not match its schema: ${JSON.stringify(r.error.issues)}`);
  // zod leaves out every "__proto__" key (a guard against prototype pollution), even where a record
  // declares any key (an application database's column may be named so); it is not a stray field.
  const sent = JSON.parse(JSON.stringify(data ?? null), (k, v: unknown) => (k === '__proto__' ? undefined : v)) as unknown;
  const declared = JSON.parse(JSON.stringify(r.data ?? null)) as unknown;
  if (!isDeepStrictEqual(sent, declared)) throw new Error(`response of ${route.operationId} carries fields its schema does not declare`);
}

/** In tests, an error code the route does not declare (so the OpenAPI document omits it) is a failure. */
function undeclared<App>(route: AnyRoute<App>, err: unknown): unknown {
  if (!(err instanceof AppError) || routeErrors(route).includes(err.code)) return err;
  return new Error(`${route.operationId} answered ${err.status} ${err.code}, which its route does not declare (add it to errors)`, { cause: err });
}

/** The path of a request target, or '' for one that is not a URL path (no route matches it). */
const pathOf = (target: string | undefined): string => requestTarget(target ?? '/')?.path ?? '';

/** Timeouts node:http enforces itself: a head or a whole request that does not arrive in time is answered 408 and closed. */
function nodeServerOptions(limits: Omit<ConnectionLimits, 'maxConnections'>) {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // How often node looks for late heads: 30 s by default, which let idle connections live 90 s.
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
  };
}

/** One request on its way through the steps: what each finds out, for those after it. */
export interface Exchange<App> {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
  /** Read once per request, so a project.json reload applies at once. */
  readonly settings: HttpSettings;
  /** The route, once found: a failure after that answers in its error format. */
  readonly matched: { route?: AnyRoute<App> };
  /** A step answered the request itself (a CORS preflight): the steps after it do not run. */
  done: boolean;
  /** The request target's path and query string (without its `?`; '' for none), as the URL parser reads them. */
  path: string;
  search: string;
  route: AnyRoute<App>;
  /** The path parameters, as the path gave them. */
  pathParams: Record<string, string>;
  principal: Principal | null;
  /** The body as read (NO_BODY when there was none), and the NULs found in it. */
  raw: unknown;
  bodyNuls: ErrorDetail[];
  params: unknown;
  query: unknown;
  body: unknown;
  /** What the handler set and answered. */
  status: number;
  headers: Record<string, string>;
  result: unknown;
}

/** What every request's steps share: the server's options and its state. */
export interface Pipeline<App> {
  opts: HttpOptions<App>;
  router: Router<App>;
  limiter: FailureLimiter;
  digests: DigestCache;
  hosts: HostCheck;
}

/** One named step of the request pipeline; a step that throws ends the request with that error (answered by the server). */
export interface RequestStep {
  name: string;
  run<App>(x: Exchange<App>, p: Pipeline<App>): void | Promise<void>;
}

/** Guards come first: nothing about a request from a rebinding or foreign page is processed. */
const guards: RequestStep = {
  name: 'guards',
  run(x, { opts, hosts }) {
    const { req, res, settings } = x;
    if (!hosts.allowed(req.headers.host, settings.allowedHosts)) {
      throw new AppError('forbidden', 'Host header not allowed; add it to server.allowedHosts in project.json to serve it.');
    }
    const origin = req.headers.origin;
    if (origin === undefined) return;
    if (!originAllowed(origin, settings.allowedOrigins) && !sameOrigin(origin, req.headers.host, opts.tls ? 'https' : 'http')) {
      throw new AppError('forbidden', 'Origin not allowed; add it to server.allowedOrigins in project.json to allow it.');
    }
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Vary', 'Origin');
    res.setHeader('Access-Control-Expose-Headers', 'X-Request-Id, X-Next-Cursor, Idempotent-Replayed');
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      res.writeHead(204, {
        'Access-Control-Allow-Methods': 'GET, HEAD, POST, PATCH, PUT, DELETE',
        'Access-Control-Allow-Headers': CORS_HEADERS,
        'Access-Control-Max-Age': '600',
      });
      res.end();
      x.done = true;
    }
  },
};

/** The route of the method and path: 404 for none, 405 (with Allow) for another method's. */
const routeStep: RequestStep = {
  name: 'route',
  run(x, { router }) {
    const target = requestTarget(x.req.url ?? '/');
    if (!target) throw new AppError('invalid_request', 'The request target is not a valid URL path.');
    x.path = target.path;
    x.search = target.query;
    const match = router.match(x.req.method ?? 'GET', x.path);
    if (match.kind === 'none') throw new AppError('not_found', `No route for ${x.req.method} ${x.path}.`);
    if (match.kind === 'method') {
      throw new AppError('method_not_allowed', `${x.req.method} is not allowed on ${x.path}; allowed: ${match.allow.join(', ')}.`, {
        headers: { Allow: match.allow.join(', ') },
      });
    }
    x.route = match.route;
    x.pathParams = match.params;
    x.matched.route = match.route;
  },
};

/** Who asks: a bearer key, else the board's session cookie; none is 401 (429 after too many failures) unless the route is public. */
const auth: RequestStep = {
  name: 'auth',
  run(x, { opts, limiter, digests }) {
    const { req, route, settings } = x;
    if (route.auth === 'public') return;
    const principal = authenticateHeader(opts.keys(), req.headers.authorization, digests);
    const decide = (session: CookieSession | null | undefined): void => {
      let who = principal;
      if (session) {
        // Every request of a session carries its token, reads too: browsers send the cookie to
        // every port of the host, and only the board's own origin has the token.
        if (!session.csrf) throw new AppError('forbidden', "This request comes with a board session cookie but without the session's X-CSRF-Token header.");
        if (session.readOnly && !SAFE_METHODS.has(req.method ?? 'GET')) throw new AppError('forbidden', 'This board session is read-only; it cannot change anything.');
        who = session.principal;
      }
      if (!who) {
        const wait = limiter.fail(clientAddress(req, settings.trustedProxy) ?? 'unknown');
        if (wait > 0) {
          throw new AppError('rate_limited', `Too many failed authentications; retry in ${wait} s.`, { headers: { 'Retry-After': String(wait) } });
        }
        const why = req.headers.authorization ? 'The API key is not valid.' : 'Missing API key: send Authorization: Bearer <key>.';
        throw new AppError('unauthorized', why, { headers: { 'WWW-Authenticate': 'Bearer' } });
      }
      // A key with grants is denied by default: its grants name application databases, so it may
      // call only the routes that check those grants, never manage agents, the vault or the daemon.
      if (who.grants !== undefined && route.scope !== 'data') {
        throw new AppError('forbidden', 'This key is limited by its grants to application databases; use a full-access key for this endpoint.');
      }
      x.principal = who;
    };
    // A session is looked up in the state (asynchronously), and only for a request without a key.
    const session = !principal && req.headers.authorization === undefined ? opts.session?.(req) : null;
    return session instanceof Promise ? session.then(decide) : decide(session);
  },
};

/** Awaited so that what follows runs after the parser's turn (the body step). */
const AFTER_PARSER = Promise.resolve();

/** The body, read up to server.maxBodyBytes (413 past it); checked against the route in the next step. */
const body: RequestStep = {
  name: 'body',
  run(x) {
    const { req, route, settings } = x;
    // Most requests carry none (every GET): nothing to read, and the same promise for all. It is
    // still awaited: the steps after it then run once node's parser has finished the request's
    // message. Answered in the middle of it (a handler that answers at once), keep-alive
    // connections were dropped under load (test/fuzz.test.ts).
    if (hasNoBody(req)) {
      x.raw = NO_BODY;
      return AFTER_PARSER;
    }
    return readBody(x, route, settings);
  },
};

/** The body that was sent: JSON where the route takes one, anything at all a 400 where it does not. */
async function readBody<App>(x: Exchange<App>, route: AnyRoute<App>, settings: HttpSettings): Promise<void> {
  if (route.body) {
    x.raw = await readJsonBody(x.req, settings.maxBodyBytes, x.bodyNuls);
    return;
  }
  // Whatever was sent where no body is taken (too large, not JSON, malformed), it is the same
  // mistake: a 400.
  x.raw = await readJsonBody(x.req, settings.maxBodyBytes).catch((err: unknown) => {
    if (!(err instanceof AppError)) throw err;
    // A refused body is not read further; close the connection rather than drain it.
    throw new AppError('invalid_request', 'Invalid request: body: This endpoint takes no body.', {
      details: [{ path: 'body', message: 'This endpoint takes no body.' }],
      headers: { Connection: 'close' },
    });
  });
}

/** Path parameters, query and body against the route's schemas: every field at fault is named in one 400. */
const validateStep: RequestStep = {
  name: 'validate',
  run(x) {
    const { route, search } = x;
    const details: ErrorDetail[] = [];
    // A NUL in any input is refused, the same on every provider (kernel/nul.ts), and is then all
    // the answer says: what the schemas would add about the same fields is noise.
    const nuls: ErrorDetail[] = [];
    // A request without a query string (most) has no query to parse or walk.
    const given = search === '' ? {} : queryObject(search);
    if (holdsNul(x.pathParams)) nulDetails('params', x.pathParams, nuls);
    if (search !== '') nulDetails('query', given, nuls);
    if (x.bodyNuls.length) nuls.push(...x.bodyNuls);
    x.params = validate(route.params, x.pathParams, 'params', details);
    if (route.query) x.query = validate(route.query, given, 'query', details);
    else if (search !== '') for (const name of new Set(queryParams(search).keys())) details.push({ path: `query.${name}`, message: 'Unknown query parameter; this endpoint takes none.' });
    if (route.body) {
      // No body at all is read as `{}`, so an endpoint whose fields are all optional can be called bare.
      if (x.raw === NO_BODY && !route.body.safeParse({}).success) details.push({ path: 'body', message: 'A JSON body is required.' });
      else x.body = validate(route.body, x.raw === NO_BODY ? {} : x.raw, 'body', details);
      // Strict everywhere: a body sent where none is taken is a client mistake worth reporting.
      // An empty object is let through, since many clients send `{}` with every POST.
    } else if (x.raw !== NO_BODY && !isEmptyObject(x.raw)) details.push({ path: 'body', message: 'This endpoint takes no body.' });
    // A NUL anywhere is refused alone (the other checks may not have read past it).
    const refused = nuls.length ? nuls : details;
    // Application-database endpoints answer their own 400 code (DESIGN section 3).
    if (refused.length) throw invalidRequest(refused, route.scope === 'data' ? 'data_invalid' : 'invalid_request');
  },
};

/** The route's handler, with what the steps before found. */
const handleStep: RequestStep = {
  name: 'handle',
  run(x, { opts }) {
    x.status = x.route.status ?? 200;
    const result = x.route.handler({
      app: opts.app,
      params: x.params,
      query: x.query,
      body: x.body,
      principal: x.principal,
      requestId: x.requestId,
      req: x.req,
      res: x.res,
      setHeader: (n, v) => {
        if (x.headers === NO_HEADERS) x.headers = {};
        x.headers[n] = v;
      },
      setStatus: (s) => {
        x.status = s;
      },
    });
    // A handler that answers at once is not waited for.
    if (!isThenable(result)) {
      x.result = result;
      return;
    }
    return Promise.resolve(result).then((r) => {
      x.result = r;
    });
  },
};

/** The answer in the success envelope (or nothing: a handler that wrote its own); checked against the route's schema in tests. */
const write: RequestStep = {
  name: 'write',
  run({ route, res, result, status, headers }, { opts }) {
    if (result === RAW_RESPONSE) return;
    if (result instanceof JsonText) {
      if (opts.checkResponses) checkResponse(route, JSON.parse(Buffer.from(result.bytes.buffer, result.bytes.byteOffset, result.bytes.byteLength).toString('utf8')));
      return sendJsonText(res, status, result, headers);
    }
    const data = result === undefined ? null : result;
    if (opts.checkResponses) checkResponse(route, data);
    sendJson(res, status, { ok: true, data }, headers);
  },
};

/** What a handler set in its answer's head until it sets something (most set nothing): one object for all, never written. */
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** A request before its first step; every field is there from the start (one object shape for every request). */
function exchange<App>(req: IncomingMessage, res: ServerResponse, requestId: string, settings: HttpSettings, matched: { route?: AnyRoute<App> }): Exchange<App> {
  return {
    req,
    res,
    requestId,
    settings,
    matched,
    done: false,
    path: '',
    search: '',
    route: undefined as unknown as AnyRoute<App>,
    pathParams: {},
    principal: null,
    raw: undefined,
    bodyNuls: [],
    params: undefined,
    query: undefined,
    body: undefined,
    status: 200,
    headers: NO_HEADERS,
    result: undefined,
  };
}

/** What the server does with a request, in order. A failure in any step is answered by the server's one error writer. */
export const REQUEST_STEPS: readonly RequestStep[] = [guards, routeStep, auth, body, validateStep, handleStep, write];

export function createHttpServer<App>(opts: HttpOptions<App>): HttpServer {
  const router = new Router(opts.routes);
  const limiter = opts.limiter ?? new FailureLimiter(() => opts.clock.now());
  const pipeline: Pipeline<App> = { opts, router, limiter, digests: new DigestCache(), hosts: new HostCheck() };
  const inflight = new Set<ServerResponse>();

  /** The steps in order (a step that need not wait is not awaited); a failure in any is answered by the one error writer. */
  async function handle(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    const matched: { route?: AnyRoute<App> } = {};
    try {
      const x = exchange(req, res, requestId, opts.settings(), matched);
      for (let i = 0; i < REQUEST_STEPS.length; i++) {
        const pending = REQUEST_STEPS[i]!.run(x, pipeline);
        if (pending) await pending;
        if (x.done) return;
      }
    } catch (err) {
      // Answered once node's parser has finished the request's message, as every answer is (see
      // the body step): a guard, the router or auth refuse before the body step.
      await AFTER_PARSER;
      answerError(req, res, requestId, matched.route, err);
    }
  }

  function answerError(req: IncomingMessage, res: ServerResponse, requestId: string, route: AnyRoute<App> | undefined, err: unknown): void {
    if (res.destroyed) return; // the client went away; nobody is left to answer
    if (opts.checkResponses && route) err = undeclared(route, err);
    const { status, body: envelope, headers, known } = toErrorResponse(err);
    if (!known) opts.log.error('unhandled error', { id: requestId, method: req.method, ...errorFields(err) });
    // A path whose routes answer in another format does so for every failure, a guard's or a
    // 405 (which come before or without a route) as much as its handler's.
    const format = route ? route.errorBody : router.errorFormat(req.method ?? 'GET', pathOf(req.url));
    let body: unknown = envelope;
    if (format) {
      body = format({ status, code: envelope.code, message: envelope.error, details: envelope.details });
      if (opts.checkResponses && !format.schema.safeParse(body).success) {
        opts.log.error('unhandled error', { id: requestId, method: req.method, error: `a ${format.id} error body does not match its schema: ${JSON.stringify(body)}` });
        sendJson(res, 500, format({ status: 500, code: 'internal', message: ERRORS.internal.message }));
        return;
      }
    }
    // A refused oversized body is not read further; close the connection rather than drain it.
    if (status === 413) headers.Connection = 'close';
    sendJson(res, status, body, headers);
  }

  const fileLimit = readFileLimit();
  const defaultCap = connectionCapFor(fileLimit);
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...opts.connections };
  // Read at each new connection, so a project.json reload applies to the next one.
  const maxConnections = () => opts.connections?.maxConnections ?? opts.settings().maxConnections ?? defaultCap;
  /** A response closed: its connection is free again, and the request's line is written. One function for every response (`this`). */
  function closed(this: KernelResponse): void {
    const req = this.req;
    inflight.delete(this);
    connections.ended(this.conn);
    const ms = monotonic() - this.startedAt;
    // The path is logged without its query string: a key pasted into ?apiKey= must not reach the log.
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const path = q === -1 ? target : target.slice(0, q);
    // 499 (nginx's "client closed request"): the client went away before the answer was sent.
    const status = this.writableFinished ? this.statusCode : 499;
    const tenths = Math.round(ms * 10) / 10;
    // Behind a declared proxy the peer is the proxy: the line says whom it forwarded.
    const proxies = opts.settings().trustedProxy;
    if (!proxies?.length && opts.log.request && req.method !== undefined) {
      opts.log.request(this.requestId, req.method, path, status, tenths);
      return;
    }
    const fields: Record<string, unknown> = { id: this.requestId, method: req.method, path, status, ms: tenths };
    if (proxies?.length) fields.client = clientAddress(req, proxies);
    opts.log.info('request', fields);
  }
  const onRequest = (req: IncomingMessage, res: KernelResponse): void => {
    res.startedAt = monotonic();
    const requestId = uuidv7();
    // Written first among the answer's headers, whoever writes them (kernel/response.ts).
    res.requestId = requestId;
    inflight.add(res);
    res.conn = connections.started(req);
    res.on('close', closed);
    void handle(req, res, requestId);
  };
  const server = opts.tls
    ? createTlsServer<typeof IncomingMessage, typeof KernelResponse>({ ...nodeServerOptions(limits), ServerResponse: KernelResponse, cert: opts.tls.cert, key: opts.tls.key }, onRequest)
    : createServer<typeof IncomingMessage, typeof KernelResponse>({ ...nodeServerOptions(limits), ServerResponse: KernelResponse }, onRequest);
  const connections = guardConnections(server as Server, { ...limits, maxConnections }, opts.log);
  opts.log.info('connection limits', {
    maxConnections: maxConnections(),
    fileLimit: fileLimit === undefined ? 'unknown' : Number.isFinite(fileLimit) ? fileLimit : 'unlimited',
    headersTimeoutMs: limits.headersTimeoutMs,
  });

  return {
    server,
    limiter,
    connections: connections.stats,
    async close(graceMs: number) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = monotonic() + graceMs;
      while (inflight.size > 0 && monotonic() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        server.closeIdleConnections();
      }
      server.closeAllConnections();
      await closed;
    },
  };
}
