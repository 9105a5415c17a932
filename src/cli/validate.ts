import type { z } from 'zod';
import { UsageError } from './context.js';

// Option values are checked with the API's own zod schemas before any request, so a bad value
// fails with the same field path and message as the API would give, without a round trip. The
// schema module is loaded only when there is something to check: `svc tasks ls` with no options
// never loads zod.

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

/** The defined entries only: an option not given is not sent, so it is not checked either. */
export const defined = (o: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/**
 * Throws InvalidOptions unless `value` passes the schema `name` of the module `load` imports;
 * `where` is the API's prefix for field paths (body, query). An empty query is not checked.
 */
export async function check<M, K extends keyof M>(load: () => Promise<M>, name: K, value: unknown, where: 'body' | 'query' = 'body'): Promise<void> {
  if (where === 'query' && value && typeof value === 'object' && !Object.keys(value).length) return;
  const schema = (await load())[name] as unknown as z.ZodType;
  const r = schema.safeParse(value);
  if (r.success) return;
  const details: Detail[] = [];
  for (const issue of r.error.issues) {
    const base = [where, ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') for (const key of issue.keys) details.push({ path: `${base}.${key}`, message: 'Unknown property; it is not allowed here.' });
    else details.push({ path: base, message: issue.message });
  }
  throw new InvalidOptions(details);
}
