import type { App } from '../../app.js';
import { toPage, type Page } from '../common.js';
import { AppError } from '../../kernel/errors.js';
import { nowIso } from '../../lib/time.js';
import { agentExists } from '../agents/service.js';
import { open, OpenError, seal, type VaultKeys } from './crypto.js';
import { VAULT } from './live.js';
import type { VaultEntry, VaultEntryInput, VaultSaved } from './schema.js';
import * as store from './store.js';

export const place = (app: App, agent: string, service: string) => ({ projectId: app.services.get(VAULT).projectId, agent, service });

export async function saveEntry(app: App, input: VaultEntryInput): Promise<VaultSaved> {
  const { agent, service, type, credentials } = input;
  const keys = Object.keys(credentials);
  return await app.events.write(async () => {
    if (!(await agentExists(app.db, agent))) throw new AppError('not_found', `Agent "${agent}" not found; vault entries belong to an existing agent.`);
    const sealed = seal(app.services.get(VAULT).keys.entryKey, place(app, agent, service), Buffer.from(JSON.stringify(credentials), 'utf8'));
    await store.upsertEntry(app.db, { agent, service, type, label: input.label ?? null, keys, ...sealed, now: nowIso(app.clock) });
    app.events.emit('vault:saved', { agent, service, type, keys });
    return { agent, service, type, keys };
  });
}

const encodeCursor = (e: VaultEntry) => Buffer.from(JSON.stringify([e.agent, e.service]), 'utf8').toString('base64url');

function decodeCursor(cursor: string): [string, string] {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === 'string')) return v as [string, string];
  } catch {
    // fall through
  }
  throw new AppError('invalid_request', 'The cursor is not one this server issued.', { details: [{ path: 'query.cursor', message: 'invalid cursor' }] });
}

export async function listEntries(app: App, q: { agent?: string; limit: number; cursor?: string }): Promise<Page<VaultEntry>> {
  const rows = await store.listEntries(app.db, { agent: q.agent, after: q.cursor ? decodeCursor(q.cursor) : undefined, limit: q.limit + 1 });
  return toPage(rows, q.limit, encodeCursor);
}

export async function removeEntry(app: App, agent: string, service: string): Promise<void> {
  await app.events.write(async () => {
    if (!(await store.deleteEntry(app.db, agent, service))) throw new AppError('not_found', `Vault entry "${agent}/${service}" not found.`);
    app.events.emit('vault:removed', { agent, service });
  });
}

/** Opens a sealed row, or answers a clear 500 that names the entry (never its content). */
export function openRow(app: App, keys: VaultKeys, row: store.SealedRow): Record<string, string> {
  try {
    return JSON.parse(open(keys.entryKey, place(app, row.agent, row.service), row).toString('utf8')) as Record<string, string>;
  } catch (err) {
    if (!(err instanceof OpenError)) throw err;
    app.log.error('a vault entry failed to authenticate', { agent: row.agent, service: row.service });
    throw new AppError(
      'internal',
      `Vault entry "${row.agent}/${row.service}" cannot be opened: authentication failed (the sealed data was altered or moved from another entry); save the entry again.`,
    );
  }
}

/** The credentials of an entry, for the daemon's own use (chat): never put them in a response. */
export async function openEntry(app: App, agent: string, service: string): Promise<Record<string, string>> {
  const row = await store.getSealed(app.db, agent, service);
  if (!row) throw new AppError('not_found', `Vault entry "${agent}/${service}" not found.`);
  return openRow(app, app.services.get(VAULT).keys, row);
}

/**
 * Every stored credential value, for scrubbing text from outside (an upstream's error, a chat
 * session) before it is kept or answered. An entry that cannot be opened is logged and skipped:
 * its value cannot be known, and one bad entry must not fail every chat.
 */
export async function secretValues(app: App): Promise<string[]> {
  const values = new Set<string>();
  for (const row of await store.allSealed(app.db)) {
    let opened: Record<string, string>;
    try {
      opened = openRow(app, app.services.get(VAULT).keys, row);
    } catch (err) {
      app.log.warn('a vault entry could not be opened while gathering secrets to scrub', { agent: row.agent, service: row.service, error: (err as Error)?.message });
      continue;
    }
    for (const v of Object.values(opened)) if (typeof v === 'string') values.add(v);
  }
  return [...values];
}

/** The key names an agent's entry holds, or null when it has no such entry (metadata only, no values). */
export async function entryKeys(app: App, agent: string, service: string): Promise<string[] | null> {
  return (await store.getEntry(app.db, agent, service))?.keys ?? null;
}
