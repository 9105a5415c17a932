import { AppError } from '../kernel/errors.js';
import { isCategory, isEventName } from './registry.js';

export type EventMatcher = (name: string) => boolean;

/**
 * Compiles an event filter: comma-separated exact names (`task:created`), category prefixes
 * ending in a colon (`task:`), `task:*` (the same prefix), or `*` (everything). Empty or absent
 * means everything. Unknown names and categories are refused so a typo does not silently
 * subscribe to nothing.
 */
export function compileFilter(filter: string | undefined, where = 'query.filter'): EventMatcher {
  const tokens = (filter ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  if (!tokens.length || tokens.includes('*')) return () => true;
  const exact = new Set<string>();
  const prefixes: string[] = [];
  const bad: string[] = [];
  for (const t of tokens) {
    const prefix = t.endsWith(':*') ? t.slice(0, -1) : t.endsWith(':') ? t : null;
    if (prefix !== null) {
      if (isCategory(prefix.slice(0, -1))) prefixes.push(prefix);
      else bad.push(t);
    } else if (isEventName(t)) exact.add(t);
    else bad.push(t);
  }
  if (bad.length) {
    throw new AppError('invalid_request', `Unknown event names or categories in filter: ${bad.join(', ')}. See GET /v1/events/catalog.`, {
      details: bad.map((b) => ({ path: where, message: `unknown event or category "${b}" (see GET /v1/events/catalog)` })),
    });
  }
  return (name) => exact.has(name) || prefixes.some((p) => name.startsWith(p));
}
