import type { z } from 'zod';
import { UsageError } from './context.js';

// Option values are checked with the API's own zod schemas before any request, so a bad value
// fails with the same field path and message as the API would give, without a round trip.

export interface Detail {
  path: string;
  message: string;
}

/** Options the API's schema refuses: exit 2, each field on its own line as the API names it. */
export class InvalidOptions extends UsageError {
  constructor(readonly details: Detail[]) {
    super('the options are invalid:');
  }
}

/** Throws InvalidOptions unless `value` passes `schema`; `where` is the API's prefix (body, query). */
export function check<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'query' = 'body'): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const details: Detail[] = [];
  for (const issue of r.error.issues) {
    const base = [where, ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') for (const key of issue.keys) details.push({ path: `${base}.${key}`, message: 'Unknown property; it is not allowed here.' });
    else details.push({ path: base, message: issue.message });
  }
  throw new InvalidOptions(details);
}
