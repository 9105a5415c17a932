// A request target (`req.url`) as its path and query, the way the WHATWG URL parser reads it
// against http://localhost: the router matches the path, the query is parsed only when there is
// one. Most targets are a plain path (`/api/v1/tasks/0193…`) that the parser would give back as it
// is; those skip the parser (a URL object a request was a tenth of the kernel's own work). Anything
// else goes through `new URL`, so both ways always agree (test/unit/target.test.ts compares them).

/** Path characters the parser keeps as they are; no `%` (an encoded dot may make a dot segment) and no `\` (read as `/`). */
const PLAIN_PATH = /^\/(?!\/)[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/;
/** Query characters the parser keeps as they are: no `'` (encoded in a special scheme's query) and no `#`. */
const PLAIN_QUERY = /^[A-Za-z0-9\-._~!$&()*+,;=:@/?%]*$/;

export interface Target {
  /** The path, as `new URL(target, 'http://localhost').pathname` gives it. */
  path: string;
  /** The query without its `?` ('' for none), as the URL's `search` holds it. */
  query: string;
}

/** The path and query of a request target, or null for one that is not a URL path. */
export function requestTarget(raw: string): Target | null {
  const q = raw.indexOf('?');
  const path = q === -1 ? raw : raw.slice(0, q);
  const query = q === -1 ? '' : raw.slice(q + 1);
  // A segment starting with a dot may be `.` or `..`, which the parser resolves: left to it.
  if (PLAIN_PATH.test(path) && !path.includes('/.') && (query === '' || PLAIN_QUERY.test(query))) return { path, query };
  try {
    const url = new URL(raw, 'http://localhost');
    return { path: url.pathname, query: url.search.slice(1) };
  } catch {
    return null;
  }
}

/**
 * The query's parameters, as the URL's searchParams holds them: URLSearchParams drops one leading
 * `?` of a string it is given, which a query may itself begin with (`/a??x=1`).
 */
export const queryParams = (query: string): URLSearchParams => new URLSearchParams(`?${query}`);
