// The board's side of the public API: the same paths and envelope as src/client, authenticated by
// the session cookie (sent by the browser), with the session's CSRF token on every request that
// changes state.

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const port = location.port || (location.protocol === 'https:' ? '443' : '80');

/** The CSRF token the login exchange left in a cookie the board may read (the session cookie it may not). */
export function csrfToken(): string {
  const name = `svc_csrf_${port}=`;
  for (const part of document.cookie.split(';')) {
    const p = part.trim();
    if (p.startsWith(name)) return p.slice(name.length);
  }
  return '';
}

let onSignedOut: () => void = () => undefined;
export const whenSignedOut = (fn: () => void): void => {
  onSignedOut = fn;
};

export async function call<T>(method: string, path: string, body?: unknown): Promise<{ data: T; headers: Headers }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken();
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, { method, headers, credentials: 'same-origin', cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiFailure(0, 'unreachable', 'The daemon cannot be reached; is it running?');
  }
  const json = (await res.json().catch(() => null)) as { ok?: boolean; data?: T; code?: string; error?: string } | null;
  if (res.status === 401) onSignedOut();
  if (!res.ok || !json || json.ok === false) throw new ApiFailure(res.status, json?.code ?? 'unknown', json?.error ?? `HTTP ${res.status}`);
  return { data: json.data as T, headers: res.headers };
}

export const get = async <T>(path: string): Promise<T> => (await call<T>('GET', path)).data;
export const post = async <T>(path: string, body?: unknown): Promise<T> => (await call<T>('POST', path, body)).data;
export const patch = async <T>(path: string, body: unknown): Promise<T> => (await call<T>('PATCH', path, body)).data;
export const del = async <T>(path: string): Promise<T> => (await call<T>('DELETE', path)).data;

/** Every page of a cursor-paged list (X-Next-Cursor), up to `max` items. */
export async function all<T>(path: string, max = 1000, cursorParam = 'cursor'): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const url: string = `${path}${sep}limit=200${cursor ? `&${cursorParam}=${encodeURIComponent(cursor)}` : ''}`;
    const page: { data: T[]; headers: Headers } = await call<T[]>('GET', url);
    out.push(...page.data);
    cursor = page.headers.get('x-next-cursor');
  } while (cursor && out.length < max);
  return out;
}

export const seg = (s: string): string => encodeURIComponent(s);
