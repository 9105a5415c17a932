import { sharedErrorFormat, type AnyRoute, type ErrorFormat, type Method } from './route.js';

interface Compiled<App> {
  route: AnyRoute<App>;
  segments: string[];
  /** Static segments rank above parameters, so /agents/teams wins over /agents/{name}. */
  rank: number;
  /** Where the template's static segments are and what they say, and its parameters' places and names. */
  statics: { at: number; text: string }[];
  params: { at: number; name: string }[];
}

export type Match<App> = { kind: 'found'; route: AnyRoute<App>; params: Record<string, string> } | { kind: 'method'; allow: (Method | 'HEAD')[] } | { kind: 'none' };

const NONE = { kind: 'none' } as const;

/**
 * The templates of one length, most specific first, by what they say at one segment (`at`, the
 * one that tells them apart best): a path is compared only with those that can match it there.
 * A template with a parameter there is in every list, in its place.
 */
interface Bucket<App> {
  at: number;
  byText: Map<string, Compiled<App>[]>;
  /** Those with a parameter at `at`: all a path can match when no template says its text there. */
  open: Compiled<App>[];
}

function bucket<App>(templates: Compiled<App>[]): Bucket<App> {
  const length = templates[0]!.segments.length;
  if (length === 0) return { at: 0, byText: new Map(), open: templates };
  let at = 0;
  let best = -1;
  for (let i = 0; i < length; i++) {
    const texts = new Set(templates.flatMap((c) => (c.segments[i]!.startsWith('{') ? [] : [c.segments[i]!])));
    if (texts.size > best) [at, best] = [i, texts.size];
  }
  const isOpen = (c: Compiled<App>) => c.params.some((p) => p.at === at);
  const byText = new Map<string, Compiled<App>[]>();
  for (const c of templates) if (!isOpen(c)) byText.set(c.segments[at]!, []);
  for (const [text, list] of byText) for (const c of templates) if (isOpen(c) || c.segments[at] === text) list.push(c);
  return { at, byText, open: templates.filter(isOpen) };
}

export class Router<App> {
  /**
   * The routes, most specific first, by their number of segments and then by one segment's text:
   * a path is compared only with the templates that can match it (a request looked at every
   * route before, most of them in vain).
   */
  private readonly byLength = new Map<number, Bucket<App>>();

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
    const compiled = routes
      .map((route): Compiled<App> => {
        const segments = route.path.split('/').filter(Boolean);
        const rank = segments.reduce((n, s, i) => n + (s.startsWith('{') ? 0 : 2 ** (segments.length - i)), 0);
        const statics: Compiled<App>['statics'] = [];
        const params: Compiled<App>['params'] = [];
        segments.forEach((s, at) => (s.startsWith('{') ? params.push({ at, name: s.slice(1, -1) }) : statics.push({ at, text: s })));
        return { route, segments, rank, statics, params };
      })
      .sort((a, b) => b.rank - a.rank);
    const lengths = new Map<number, Compiled<App>[]>();
    for (const c of compiled) {
      const list = lengths.get(c.segments.length);
      if (list) list.push(c);
      else lengths.set(c.segments.length, [c]);
    }
    for (const [length, templates] of lengths) this.byLength.set(length, bucket(templates));
  }

  /** The templates a path of these segments can match, most specific first. */
  private candidates(parts: string[] | null): Compiled<App>[] | undefined {
    if (!parts) return undefined;
    const b = this.byLength.get(parts.length);
    return b && (b.byText.get(parts[b.at]!) ?? b.open);
  }

  /** HEAD is answered by the GET route of the path (the server sends its headers, not its body). */
  match(method: string, pathname: string): Match<App> {
    const wanted = method === 'HEAD' ? 'GET' : method;
    const parts = pathParts(pathname);
    const candidates = this.candidates(parts);
    if (!candidates) return NONE;
    for (const c of candidates) {
      if (c.route.method === wanted && matches(c, parts!)) return { kind: 'found', route: c.route, params: paramsOf(c, parts!) };
    }
    const { allow } = this.others(candidates, parts!);
    return allow.length ? { kind: 'method', allow } : NONE;
  }

  /**
   * The error format a failure of this request is answered in, known without passing the route's
   * checks (a guard refuses before routing): its route's for the method; for a method the path
   * lacks, the one every route of the path shares; none (the envelope) where no route matches.
   */
  errorFormat(method: string, pathname: string): ErrorFormat | undefined {
    const wanted = method === 'HEAD' ? 'GET' : method;
    const parts = pathParts(pathname);
    const candidates = this.candidates(parts);
    if (!candidates) return undefined;
    for (const c of candidates) if (c.route.method === wanted && matches(c, parts!)) return c.route.errorBody;
    return sharedErrorFormat(this.others(candidates, parts!).pathRoutes);
  }

  /** The routes of the most specific path template that matches (it decides the Allow list of a 405), and their methods. */
  private others(candidates: Compiled<App>[], parts: string[]): { allow: (Method | 'HEAD')[]; pathRoutes: AnyRoute<App>[] } {
    const allow: (Method | 'HEAD')[] = [];
    const pathRoutes: AnyRoute<App>[] = [];
    let bestPath: string | undefined;
    for (const c of candidates) {
      if (!matches(c, parts)) continue;
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

/** A path's non-empty segments, decoded; null when one does not decode (no route matches it). */
function pathParts(pathname: string): string[] | null {
  const parts: string[] = [];
  for (const s of pathname.split('/')) {
    if (!s) continue;
    if (!s.includes('%')) {
      parts.push(s);
      continue;
    }
    try {
      parts.push(decodeURIComponent(s));
    } catch {
      return null;
    }
  }
  return parts;
}

function matches(c: Compiled<unknown>, parts: string[]): boolean {
  for (const s of c.statics) if (parts[s.at] !== s.text) return false;
  return true;
}

function paramsOf(c: Compiled<unknown>, parts: string[]): Record<string, string> {
  const params: Record<string, string> = {};
  for (const p of c.params) params[p.name] = parts[p.at]!;
  return params;
}
