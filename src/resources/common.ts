import { z } from 'zod';
import { UUID_RE } from '../lib/ids.js';

// Schemas shared by several resources.

export const RESERVED_AGENT_NAMES = ['team', 'teams'];

/** Agent and team names: they appear in paths, CLI arguments and file names, so keep them plain. */
export const NameSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit');

export const Timestamp = z.iso.datetime().describe('ISO 8601 UTC with milliseconds.');

export const Removed = z.object({ removed: z.literal(true) }).meta({ id: 'Removed' });

/** `{name}` path parameter. */
export const NameParam = z.strictObject({ name: z.string().min(1).max(128) });

// Lists that can grow without bound: `limit` and a `cursor` in, the next cursor out in the
// X-Next-Cursor header (absent on the last page).
export const PageLimit = z.coerce.number().int().min(1).max(200).default(50).describe('Page size, 1..200 (default 50).');
export const IdCursor = z.string().regex(UUID_RE, 'must be a cursor from X-Next-Cursor').optional().describe('The X-Next-Cursor header of the previous page.');

export interface Page<T> {
  items: T[];
  /** The cursor of the next page, or null on the last one. */
  next: string | null;
}

/** Splits `limit + 1` fetched rows into the page to answer and the cursor of the next page. */
export function toPage<T>(rows: T[], limit: number, cursorOf: (last: T) => string): Page<T> {
  if (rows.length <= limit) return { items: rows, next: null };
  const items = rows.slice(0, limit);
  return { items, next: cursorOf(items[items.length - 1]!) };
}

/** A page as a list answer: the items, with the next cursor in X-Next-Cursor when more follow. */
export function pageAnswer<T>(setHeader: (name: string, value: string) => void, page: Page<T>): T[] {
  if (page.next) setHeader('X-Next-Cursor', page.next);
  return page.items;
}
