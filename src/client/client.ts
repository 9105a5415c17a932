import { request } from 'undici';

// The typed HTTP client the CLI is built on, exported for users' own tools.

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

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET']);

export class SvcClient {
  readonly url: string;
  constructor(private readonly opts: ClientOptions) {
    this.url = opts.url.replace(/\/+$/, '');
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json', ...extra };
    if (this.opts.apiKey) h.authorization = `Bearer ${this.opts.apiKey}`;
    return h;
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
    let res;
    try {
      res = await request(u, {
        method: method as 'GET',
        headers,
        body,
        headersTimeout: this.opts.timeoutMs ?? 30_000,
        bodyTimeout: this.opts.timeoutMs ?? 30_000,
      });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (NETWORK_CODES.has(code) || (err as Error).name === 'ConnectTimeoutError') throw new UnreachableError(this.url, err);
      throw err;
    }
    const text = await res.body.text();
    let json: { ok?: boolean; data?: T; code?: string; error?: string; details?: { path: string; message: string }[] };
    try {
      json = JSON.parse(text);
    } catch {
      throw new ApiError(res.statusCode, 'invalid_response', `the server answered ${res.statusCode} with a body that is not JSON`);
    }
    if (res.statusCode >= 400 || json.ok === false) {
      throw new ApiError(res.statusCode, json.code ?? 'unknown', json.error ?? `HTTP ${res.statusCode}`, json.details);
    }
    return { data: json.data as T, status: res.statusCode, headers: res.headers };
  }

  /** GETs a path that answers plain JSON rather than the envelope (e.g. /openapi.json). */
  async raw<T>(path: string): Promise<T> {
    let res;
    try {
      res = await request(this.url + path, { headers: this.headers() });
    } catch (err) {
      throw new UnreachableError(this.url, err);
    }
    const json = (await res.body.json()) as T;
    if (res.statusCode >= 400) {
      const e = json as { code?: string; error?: string };
      throw new ApiError(res.statusCode, e.code ?? 'unknown', e.error ?? `HTTP ${res.statusCode}`);
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
