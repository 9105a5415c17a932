import { lockKey, stmt, type DB } from '../../db/open.js';
import { open, seal, type EntryPlace } from './crypto.js';

// Values every daemon on a shared (PostgreSQL) state must hold alike, such as the key that seals
// webhook secrets or an application database's role passwords: kept in the state's meta table,
// sealed under the vault's entry key, which every daemon there holds. The first daemon to ask
// records its fresh value in one transaction; every later one, on any machine, opens that one.

/** The value recorded under `metaKey`, or `fresh()` recorded there when there is none yet (it may throw to refuse). */
export async function sharedSealed(db: DB, entryKey: Buffer, place: EntryPlace, metaKey: string, fresh: () => Buffer | Promise<Buffer>): Promise<Buffer> {
  const stored = await db.transaction(async () => {
    // Daemons starting together: the first records its value, the others wait and read it.
    await lockKey(db, 'meta', metaKey);
    const row = (await stmt(db, 'SELECT value FROM meta WHERE key = ?').get(metaKey)) as { value: string } | undefined;
    if (row) return row.value;
    const s = seal(entryKey, place, await fresh());
    const value = JSON.stringify({ sealed: s.sealed.toString('base64'), nonce: s.nonce.toString('base64') });
    await stmt(db, 'INSERT INTO meta (key, value) VALUES (?, ?)').run(metaKey, value);
    return value;
  });
  const { sealed, nonce } = JSON.parse(stored) as { sealed: string; nonce: string };
  return open(entryKey, place, { sealed: Buffer.from(sealed, 'base64'), nonce: Buffer.from(nonce, 'base64') });
}

export async function dropShared(db: DB, metaKey: string): Promise<void> {
  await stmt(db, 'DELETE FROM meta WHERE key = ?').run(metaKey);
}
