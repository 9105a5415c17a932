import type { ErrorDetail } from './errors.js';

// A NUL (U+0000) anywhere in a request's input (a path parameter, a query parameter or its name, a
// string or a property name of the JSON body) is refused with a 400 naming the field, whatever the
// providers: PostgreSQL's text cannot hold one (libpq would cut the value at it) while SQLite's
// can, and one rule for both keeps a request that works on one state working on the other.

const IN_VALUE = 'Contains a NUL character (U+0000), which is not allowed.';
const IN_NAME = 'This name contains a NUL character (U+0000), which is not allowed.';
/** Enough to say what to fix; a body full of them is not listed whole. */
const MAX_DETAILS = 10;

/** How a name holding a NUL is shown in a detail's path. */
const shown = (name: string): string => name.replaceAll('\u0000', '\\u0000');

/**
 * Adds a detail for each NUL found in `value` (under `where`: params, query, body). Walks only
 * what the request held, whose depth the body reader has already bounded.
 */
export function nulDetails(where: string, value: unknown, out: ErrorDetail[]): void {
  const walk = (v: unknown, path: string): void => {
    if (out.length >= MAX_DETAILS) return;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) out.push({ path, message: IN_VALUE });
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, `${path}.${i}`));
      return;
    }
    for (const k of Object.keys(v)) {
      if (k.includes('\u0000')) {
        out.push({ path: `${path}.${shown(k)}`, message: IN_NAME });
        if (out.length >= MAX_DETAILS) return;
      }
      walk((v as Record<string, unknown>)[k], `${path}.${shown(k)}`);
    }
  };
  walk(value, where);
}

/**
 * True when JSON text may hold a NUL: JSON writes one only as the escape \u0000 (a raw one inside
 * a string is not JSON), so a body without that text needs no walk.
 */
export const jsonMayHoldNul = (text: string): boolean => text.includes('\\u0000');
