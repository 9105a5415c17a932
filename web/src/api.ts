// The board's side of the public API: the same paths and envelope as src/client, authenticated by
// the session cookie (sent by the browser) together with the session's CSRF token, on every request.

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const TOKEN_KEY = 'svc.csrf';

// The login exchange sends the page to /#csrf=<token>: kept in this origin's localStorage (no
// other port or site can read it) and taken out of the address bar and the history.
{
  const m = /^#csrf=([\w-]{20,128})$/.exec(location.hash);
  if (m) {
    localStorage.setItem(TOKEN_KEY, m[1]!);
    history.replaceState(null, '', location.pathname + location.search);
  }
}

/** The session's CSRF token, sent on every request: the session cookie alone is not enough. */
export function csrfToken(): string {
  return localStorage.getItem(TOKEN_KEY) ?? '';
}

let onSignedOut: () => void = () => undefined;
export const whenSignedOut = (fn: () => void): void => {
  onSignedOut = fn;
};

export async function call<T>(method: string, path: string, body?: unknown): Promise<{ data: T; headers: Headers }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  headers['x-csrf-token'] = csrfToken();
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, { method, headers, credentials: 'same-origin', cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiFailure(0, 'unreachable', 'The daemon cannot be reached; is it running?');
  }
  const json = (await res.json().catch(() => null)) as { ok?: boolean; data?: T; code?: string; error?: string } | null;
  if (res.status === 401 || (res.status === 403 && !csrfToken())) onSignedOut();
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
