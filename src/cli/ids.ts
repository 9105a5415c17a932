import { ApiError, type SvcClient } from '../client/client.js';
import { UsageError } from './context.js';
import { shortId } from '../lib/human.js';

// Short ids, like git's abbreviated hashes: wherever the CLI takes the id of a task, mission or
// approval, a unique prefix or suffix of at least 4 characters works, and so does the start of
// the short id a table printed (its first 4 characters, say). Tables print the last 8
// characters (the random end of a v7 id; the start is its creation time, shared by ids made in the
// same minute). A full id is used as given, without a request; a short one is looked up through
// the resource's list endpoint, page by page.

export const MIN_SHORT_ID = 4;
const FULL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PAGE = 200;
/** Past this many candidates the answer is "ambiguous" already; the rest need not be fetched. */
const MAX_CANDIDATES = 10;

export interface IdKind {
  /** "task", as messages say it. */
  noun: string;
  /** The list endpoint, answering pages of objects with an `id`. */
  list: string;
  /** What to show of each candidate, beside its id. */
  label?: (row: Record<string, unknown>) => unknown;
  /** False for a bounded list answered whole (no limit or cursor). */
  paged?: boolean;
  /** The query parameter taking X-Next-Cursor (default `cursor`; a webhook's deliveries take `before`). */
  cursorParam?: string;
}

export const TASK: IdKind = { noun: 'task', list: '/api/v1/tasks', label: (r) => r.title };
export const MISSION: IdKind = { noun: 'mission', list: '/api/v1/missions', label: (r) => r.name };
export const APPROVAL: IdKind = { noun: 'approval', list: '/api/v1/approvals', label: (r) => r.title };
export const WEBHOOK: IdKind = { noun: 'webhook', list: '/v1/webhooks', label: (r) => r.url, paged: false };
/** The deliveries of one webhook (its full id). */
export const deliveryOf = (webhookId: string): IdKind => ({ noun: 'delivery', list: `/v1/webhooks/${encodeURIComponent(webhookId)}/deliveries`, label: (r) => r.event, cursorParam: 'before' });

/** Matches `input` against the ids: each that starts or ends with it, or whose short id starts with it. */
export function matchIds<T extends { id: string }>(input: string, rows: Iterable<T>): T[] {
  const needle = input.toLowerCase();
  const found: T[] = [];
  for (const r of rows) {
    const id = r.id.toLowerCase();
    if (id === needle) return [r];
    if (id.startsWith(needle) || id.endsWith(needle) || shortId(id)!.startsWith(needle)) found.push(r);
  }
  return found;
}

/** The full id `input` stands for; exit 2 when it is too short or ambiguous, 1 when nothing matches. */
export async function resolveId(client: SvcClient, kind: IdKind, input: string): Promise<string> {
  const given = input.trim();
  if (FULL_ID.test(given)) return given.toLowerCase();
  if (given.length < MIN_SHORT_ID) {
    throw new UsageError(`${kind.noun} id "${given}" is too short: give at least ${MIN_SHORT_ID} characters (tables show the last 8)`);
  }
  const candidates: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.call<Record<string, unknown>[]>('GET', kind.list, kind.paged === false ? {} : { query: { limit: PAGE, [kind.cursorParam ?? 'cursor']: cursor } });
    for (const m of matchIds(given, page.data as { id: string }[])) {
      if ((m.id as string).toLowerCase() === given.toLowerCase()) return m.id as string;
      candidates.push(m);
    }
    const next = page.headers['x-next-cursor'];
    cursor = typeof next === 'string' && next ? next : undefined;
  } while (cursor && candidates.length <= MAX_CANDIDATES);
  if (candidates.length === 1) return candidates[0]!.id as string;
  if (!candidates.length) throw new ApiError(404, 'not_found', `no ${kind.noun} id starts or ends with "${given}"`);
  const lines = candidates.slice(0, MAX_CANDIDATES).map((c) => `  ${shortId(c.id as string)}  ${c.id as string}  ${String(kind.label?.(c) ?? '')}`.trimEnd());
  const more = candidates.length > MAX_CANDIDATES ? '\n  …and more' : '';
  throw new UsageError(`${kind.noun} id "${given}" is ambiguous; it matches:\n${lines.join('\n')}${more}\nhint: give more characters`);
}
