import { sharedErrorFormat, type AnyRoute, type ErrorFormat, type Method } from './route.js';

interface Compiled<App> {
  route: AnyRoute<App>;
  segments: string[];
  /** Static segments rank above parameters, so /agents/teams wins over /agents/{name}. */
  rank: number;
}

export type Match<App> = { kind: 'found'; route: AnyRoute<App>; params: Record<string, string> } | { kind: 'method'; allow: (Method | 'HEAD')[] } | { kind: 'none' };

export class Router<App> {
  private readonly compiled: Compiled<App>[];

  constructor(routes: AnyRoute<App>[]) {
    const seen = new Set<string>();
    for (const r of routes) {
      const key = `${r.method} ${r.path}`;
      if (seen.has(key)) throw new Error(`route defined twice: ${key}`);
      seen.add(key);
    }
    const ids = new Set<string>();
    for (const r of routes) {
      if (ids.has(r.operationId)) throw new Error(`operationId used twice: ${r.operationId}`);
      ids.add(r.operationId);
    }
    this.compiled = routes
      .map((route) => {
        const segments = route.path.split('/').filter(Boolean);
        const rank = segments.reduce((n, s, i) => n + (s.startsWith('{') ? 0 : 2 ** (segments.length - i)), 0);
        return { route, segments, rank };
      })
      .sort((a, b) => b.rank - a.rank);
  }

  /** HEAD is answered by the GET route of the path (the server sends its headers, not its body). */
  match(method: string, pathname: string): Match<App> {
    const m = this.find(method, pathname);
    if (m.found) return { kind: 'found', route: m.found.route, params: m.found.params };
    if (m.allow.length) return { kind: 'method', allow: m.allow };
    return { kind: 'none' };
  }

  /**
   * The error format a failure of this request is answered in, known without passing the route's
   * checks (a guard refuses before routing): its route's for the method; for a method the path
   * lacks, the one every route of the path shares; none (the envelope) where no route matches.
   */
  errorFormat(method: string, pathname: string): ErrorFormat | undefined {
    const m = this.find(method, pathname);
    return m.found ? m.found.route.errorBody : sharedErrorFormat(m.pathRoutes);
  }

  private find(method: string, pathname: string): { found?: { route: AnyRoute<App>; params: Record<string, string> }; allow: (Method | 'HEAD')[]; pathRoutes: AnyRoute<App>[] } {
    const wanted = method === 'HEAD' ? 'GET' : method;
    const allow: (Method | 'HEAD')[] = [];
    const pathRoutes: AnyRoute<App>[] = [];
    let parts: string[];
    try {
      parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
    } catch {
      return { allow, pathRoutes };
    }
    // The most specific path template that matches decides the Allow list of a 405.
    let bestPath: string | undefined;
    for (const c of this.compiled) {
      const params = matchSegments(c.segments, parts);
      if (!params) continue;
      if (c.route.method === wanted) return { found: { route: c.route, params }, allow, pathRoutes };
      bestPath ??= c.route.path;
      if (c.route.path === bestPath) {
        pathRoutes.push(c.route);
        allow.push(c.route.method);
        if (c.route.method === 'GET') allow.push('HEAD');
      }
    }
    return { allow, pathRoutes };
  }
}

function matchSegments(template: string[], parts: string[]): Record<string, string> | null {
  if (template.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < template.length; i++) {
    const t = template[i]!;
    if (t.startsWith('{')) params[t.slice(1, -1)] = parts[i]!;
    else if (t !== parts[i]) return null;
  }
  return params;
}
