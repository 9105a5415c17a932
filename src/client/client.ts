import { request as httpRequest } from 'node:http';
import { X509Certificate } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { checkServerIdentity, rootCertificates, type ConnectionOptions, type PeerCertificate } from 'node:tls';

// The typed HTTP client the CLI is built on, exported for users' own tools. It uses node:http
// rather than the undici package (loading undici costs a CLI command more than its request) or
// fetch (which refuses the ports on the WHATWG block list, 6000 or 6667 among them).

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: { path: string; message: string }[],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** No daemon answered at the URL (refused, reset, timed out). */
export class UnreachableError extends Error {
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    super(`no svc daemon answered at ${url}`, { cause });
    this.name = 'UnreachableError';
  }
}

export interface ClientOptions {
  url: string;
  apiKey?: string;
  timeoutMs?: number;
  /**
   * PEM certificate (a daemon's server.tls.cert) to trust besides the system's CAs: a self-signed
   * one verifies, and its leaf is accepted under any name (the CLI reaches its own daemon at
   * 127.0.0.1 while the certificate names svc.example.com).
   */
  ca?: string | Buffer;
}

/** TLS options that trust `ca` besides the system's roots and pin its leaf certificate. */
export function trustingTls(ca: string | Buffer): ConnectionOptions {
  let pinned: string | undefined;
  try {
    pinned = new X509Certificate(ca).fingerprint256;
  } catch {
    // not a certificate: only the system's roots and the usual name check apply
  }
  return {
    ca: [...rootCertificates, ca.toString()],
    checkServerIdentity: (host: string, cert: PeerCertificate) => (pinned !== undefined && cert.fingerprint256 === pinned ? undefined : checkServerIdentity(host, cert)),
  };
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Response<T> {
  data: T;
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'EADDRNOTAVAIL', 'ETIMEDOUT', 'EPIPE', 'ENETUNREACH']);

const isNetworkError = (err: unknown): boolean => NETWORK_CODES.has((err as NodeJS.ErrnoException)?.code ?? '');

export class SvcClient {
  readonly url: string;
  /** Connection options for https URLs (undefined: node's defaults). */
  readonly tls: ConnectionOptions | undefined;
  constructor(private readonly opts: ClientOptions) {
    this.url = opts.url.replace(/\/+$/, '');
    this.tls = opts.ca === undefined ? undefined : trustingTls(opts.ca);
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json', ...extra };
    if (this.opts.apiKey) h.authorization = `Bearer ${this.opts.apiKey}`;
    return h;
  }

  private send(method: string, url: URL | string, headers: Record<string, string>, body?: string): Promise<{ status: number; headers: Response<unknown>['headers']; text: string }> {
    const u = typeof url === 'string' ? new URL(url) : url;
    const timeout = this.opts.timeoutMs ?? 30_000;
    return new Promise((resolve, reject) => {
      const options = { method, headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) } };
      const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(u, u.protocol === 'https:' && this.tls ? { ...options, ...this.tls } : options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (err) => reject(new UnreachableError(this.url, err)));
      });
      // One deadline for the whole exchange: connecting, the answer's head and its body.
      const timer = setTimeout(() => req.destroy(Object.assign(new Error(`no answer within ${timeout} ms`), { code: 'ETIMEDOUT' })), timeout);
      req.on('close', () => clearTimeout(timer));
      req.on('error', (err) => reject(isNetworkError(err) ? new UnreachableError(this.url, err) : err));
      req.end(body);
    });
  }

  /** Calls the API and returns the envelope's `data`; failures throw ApiError or UnreachableError. */
  async call<T>(method: string, path: string, options: RequestOptions = {}): Promise<Response<T>> {
    const u = new URL(this.url + path);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
    const headers = this.headers(options.headers);
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const res = await this.send(method, u, headers, body);
    let json: { ok?: boolean; data?: T; code?: string; error?: string; details?: { path: string; message: string }[] };
    try {
      json = JSON.parse(res.text);
    } catch {
      throw new ApiError(res.status, 'invalid_response', `the server answered ${res.status} with a body that is not JSON`);
    }
    if (res.status >= 400 || json.ok === false) {
      throw new ApiError(res.status, json.code ?? 'unknown', json.error ?? `HTTP ${res.status}`, json.details);
    }
    return { data: json.data as T, status: res.status, headers: res.headers };
  }

  /** GETs a path that answers plain JSON rather than the envelope (e.g. /openapi.json). */
  async raw<T>(path: string): Promise<T> {
    const res = await this.send('GET', this.url + path, this.headers());
    let json: T;
    try {
      json = JSON.parse(res.text) as T;
    } catch {
      throw new ApiError(res.status, 'invalid_response', `the server answered ${res.status} with a body that is not JSON`);
    }
    if (res.status >= 400) {
      const e = json as { code?: string; error?: string };
      throw new ApiError(res.status, e.code ?? 'unknown', e.error ?? `HTTP ${res.status}`);
    }
    return json;
  }

  async get<T>(path: string, query?: RequestOptions['query']): Promise<T> {
    return (await this.call<T>('GET', path, { query })).data;
  }
  async post<T>(path: string, body?: unknown): Promise<T> {
    return (await this.call<T>('POST', path, { body })).data;
  }
  async patch<T>(path: string, body: unknown): Promise<T> {
    return (await this.call<T>('PATCH', path, { body })).data;
  }
  async delete<T>(path: string, query?: RequestOptions['query']): Promise<T> {
    return (await this.call<T>('DELETE', path, { query })).data;
  }
}

/** Encodes one path segment. */
export const seg = (s: string): string => encodeURIComponent(s);
