import { stmt, type DB } from '../../db/open.js';
import type { VaultEntry } from './schema.js';

export interface SealedRow {
  agent: string;
  service: string;
  sealed: Buffer;
  nonce: Buffer;
}

interface Row {
  agent: string;
  service: string;
  type: VaultEntry['type'];
  label: string | null;
  keys: string;
  created_at: string;
  updated_at: string;
}

// The listing never selects the sealed columns: what is not read cannot leak.
const COLUMNS = 'agent, service, type, label, keys, created_at, updated_at';

export const toVaultEntry = (r: Row): VaultEntry => ({
  agent: r.agent,
  service: r.service,
  type: r.type,
  label: r.label,
  keys: JSON.parse(r.keys) as string[],
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function upsertEntry(db: DB, e: { agent: string; service: string; type: string; label: string | null; keys: string[]; sealed: Buffer; nonce: Buffer; now: string }): Promise<void> {
  await stmt(
    db,
    `INSERT INTO vault_entries (agent, service, type, label, keys, sealed, nonce, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (agent, service) DO UPDATE SET
       type = excluded.type, label = excluded.label, keys = excluded.keys,
       sealed = excluded.sealed, nonce = excluded.nonce, updated_at = excluded.updated_at`,
  ).run(e.agent, e.service, e.type, e.label, JSON.stringify(e.keys), e.sealed, e.nonce, e.now, e.now);
}

export async function getEntry(db: DB, agent: string, service: string): Promise<VaultEntry | null> {
  const r = (await stmt(db, `SELECT ${COLUMNS} FROM vault_entries WHERE agent = ? AND service = ?`).get(agent, service)) as Row | undefined;
  return r ? toVaultEntry(r) : null;
}

export async function getSealed(db: DB, agent: string, service: string): Promise<SealedRow | null> {
  const r = await stmt(db, 'SELECT agent, service, sealed, nonce FROM vault_entries WHERE agent = ? AND service = ?').get(agent, service);
  return (r as SealedRow | undefined) ?? null;
}

/** One page in (agent, service) order, starting after `after`. */
export async function listEntries(db: DB, f: { agent?: string; after?: [string, string]; limit: number }): Promise<VaultEntry[]> {
  const [a, s] = f.after ?? ['', ''];
  const rows = f.agent
    ? await stmt(db, `SELECT ${COLUMNS} FROM vault_entries WHERE agent = ? AND (agent, service) > (?, ?) ORDER BY agent, service LIMIT ?`).all(f.agent, a, s, f.limit)
    : await stmt(db, `SELECT ${COLUMNS} FROM vault_entries WHERE (agent, service) > (?, ?) ORDER BY agent, service LIMIT ?`).all(a, s, f.limit);
  return (rows as Row[]).map(toVaultEntry);
}

export async function deleteEntry(db: DB, agent: string, service: string): Promise<boolean> {
  return (await stmt(db, 'DELETE FROM vault_entries WHERE agent = ? AND service = ?').run(agent, service)).changes > 0;
}

export async function countEntries(db: DB): Promise<number> {
  return ((await stmt(db, 'SELECT COUNT(*) AS n FROM vault_entries').get()) as { n: number }).n;
}

export async function allSealed(db: DB): Promise<SealedRow[]> {
  return (await stmt(db, 'SELECT agent, service, sealed, nonce FROM vault_entries ORDER BY agent, service').all()) as SealedRow[];
}

/** One agent's sealed entries (its primary-key prefix: no scan of other agents' rows). */
export async function sealedOf(db: DB, agent: string): Promise<SealedRow[]> {
  return (await stmt(db, 'SELECT agent, service, sealed, nonce FROM vault_entries WHERE agent = ? ORDER BY service').all(agent)) as SealedRow[];
}

export async function replaceSealed(db: DB, r: SealedRow): Promise<void> {
  await stmt(db, 'UPDATE vault_entries SET sealed = ?, nonce = ? WHERE agent = ? AND service = ?').run(r.sealed, r.nonce, r.agent, r.service);
}

const CHECK_KEY = 'vault.keyCheck';

export async function getKeyCheck(db: DB): Promise<Buffer | null> {
  const r = (await stmt(db, 'SELECT value FROM meta WHERE key = ?').get(CHECK_KEY)) as { value: string } | undefined;
  return r ? Buffer.from(r.value, 'hex') : null;
}

export async function setKeyCheck(db: DB, check: Buffer): Promise<void> {
  await stmt(db, 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(CHECK_KEY, check.toString('hex'));
}
