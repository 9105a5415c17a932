import { randomBytes } from 'node:crypto';
import type { App } from '../../app.js';
import { lockKey, type DB } from '../../db/open.js';
import { AppError } from '../../kernel/errors.js';
import type { Logger } from '../../kernel/log.js';
import { deriveKeys, MASTER_KEY_BYTES, open, OpenError, sameCheck, seal, type VaultKeys } from './crypto.js';
import { osKeychain, type Keychain } from './keychain.js';
import { configDir, ENV_KEY, fileLocation, locateMasterKey, locateSharedKey, type KeySource } from './master-key.js';
import { VAULT, type Vault } from './live.js';
import { openRow, place } from './service.js';
import * as store from './store.js';

// The master key's lifecycle: found (or made) and proven at start, rotated on request. The entries
// themselves are sealed and opened in service.ts.

export type { Vault } from './live.js';

export interface OpenVaultOptions {
  db: DB;
  projectId: string;
  env: NodeJS.ProcessEnv;
  log: Logger;
  keychain?: Keychain;
  /**
   * The state is shared by several daemons (PostgreSQL): the key comes from SVC_VAULT_KEY or this
   * key file (null: none named), and a key other than the one recorded is refused even when the
   * vault is empty, since other daemons seal with the recorded one.
   */
  shared?: { keyFile: string | null };
}

/** The entry fails to authenticate under `keys`. */
function opensWith(projectId: string, keys: VaultKeys, row: store.SealedRow): boolean {
  try {
    open(keys.entryKey, { projectId, agent: row.agent, service: row.service }, row);
    return true;
  } catch (err) {
    if (err instanceof OpenError) return false;
    throw err;
  }
}

/**
 * Finds (or, on the first start, creates) the master key and proves it is the one that sealed the
 * existing entries. A key that is not is a start-up error naming where it came from: an empty
 * vault in place of the user's credentials would be worse than no daemon.
 */
export async function openVault(o: OpenVaultOptions): Promise<Vault> {
  if (o.shared) return openSharedVault(o, o.shared.keyFile);
  const { db, projectId, log } = o;
  const found = await locateMasterKey(o.env, projectId, o.keychain ?? osKeychain(), (m) => log.warn(m));
  const count = await store.countEntries(db);
  const recorded = await store.getKeyCheck(db);
  const fits = async (keys: VaultKeys): Promise<boolean> => {
    if (recorded) return sameCheck(recorded, keys.check);
    const first = (await store.allSealed(db))[0];
    return !first || opensWith(projectId, keys, first);
  };
  let master = found.key;
  let location = found.location;
  const hint = location.source === 'env' ? `set ${ENV_KEY} to the key the entries were sealed with` : `restore the key to ${location.where}, or set ${ENV_KEY} to the key the entries were sealed with`;
  if (master && !(await fits(deriveKeys(master, projectId)))) {
    // A rotation may have re-sealed the entries and then stopped before storing its new key.
    const next = await location.readNext().catch(() => null);
    // Or the keychain did not answer at an earlier start, and the key was made in the file.
    const file = location.source === 'keychain' ? fileLocation(configDir(o.env), projectId, (m) => log.warn(m)) : null;
    const fromFile = file ? await file.read().catch(() => null) : null;
    if (next && (await fits(deriveKeys(next, projectId)))) {
      await location.promoteNext(next);
      log.warn('finished an interrupted vault key rotation', { source: location.source });
      master = next;
    } else if (file && fromFile && (await fits(deriveKeys(fromFile, projectId)))) {
      log.warn('the keychain holds another vault master key; using the key file, which opens the entries', { where: file.where });
      location = file;
      master = fromFile;
    } else if (count > 0) {
      throw new Error(`the vault master key from ${location.where} cannot open the existing entries (${count}); ${hint}`);
    } else {
      log.warn('the vault master key differs from the one recorded, and the vault is empty: recording this one', { source: location.source });
    }
  } else if (master) {
    await location.clearNext().catch(() => undefined);
  }

  if (!master) {
    if (count > 0) {
      const skipped = found.keychainSkipped ? ` (${found.keychainSkipped})` : '';
      throw new Error(`no vault master key found in ${location.where}${skipped}, but the vault holds ${count} entries sealed under one; ${hint}`);
    }
    master = randomBytes(MASTER_KEY_BYTES);
    await location.write(master);
    log.info('created the vault master key', { source: location.source, where: location.where });
  }

  const keys = deriveKeys(master, projectId);
  if (!recorded || !sameCheck(recorded, keys.check)) await store.setKeyCheck(db, keys.check);
  log.info('vault master key', {
    source: location.source,
    where: location.where,
    entries: count,
    ...(found.keychainSkipped ? { keychainSkipped: found.keychainSkipped } : {}),
  });
  return { projectId, location, keys, rotating: false };
}

async function openSharedVault(o: OpenVaultOptions, keyFile: string | null): Promise<Vault> {
  const { db, projectId, log } = o;
  const { location, key } = await locateSharedKey(o.env, keyFile, (m) => log.warn(m));
  const keys = deriveKeys(key, projectId);
  // Recorded by whichever daemon opened the shared state first, inside one transaction, so two
  // daemons starting at once with different keys cannot both record theirs.
  const recorded = await db.transaction(async () => {
    await lockKey(db, 'meta', 'vault.keyCheck');
    const r = await store.getKeyCheck(db);
    if (r) return r;
    // Entries but no check recorded (an older export): the key must open them before it is recorded.
    const first = (await store.allSealed(db))[0];
    if (first && !opensWith(projectId, keys, first)) {
      throw new Error(`the vault master key from ${location.where} cannot open the existing entries; give every daemon the key they were sealed with`);
    }
    await store.setKeyCheck(db, keys.check);
    return null;
  });
  if (recorded && !sameCheck(recorded, keys.check)) {
    throw new Error(`the vault master key from ${location.where} is not the one the other daemons on this state use (its check differs from the recorded one); give every daemon the same key`);
  }
  const count = await store.countEntries(db);
  log.info('vault master key', { source: location.source, where: location.where, entries: count, shared: true });
  return { projectId, location, keys, rotating: false, shared: true };
}

/**
 * Re-seals every entry under a new master key in one transaction. The new key is first put in its
 * location's "next" slot, so that whatever step a crash interrupts, one stored key opens the vault.
 */
export async function rotateKey(app: App, newKeyHex?: string): Promise<{ rotated: number; source: KeySource }> {
  const vault = app.services.get(VAULT);
  const { location } = vault;
  if (vault.shared) {
    // The other daemons hold the old key in memory and read it from their own environment or file.
    throw new AppError(
      'conflict',
      'The state is shared by several daemons (PostgreSQL), which would keep sealing with the old key. Rotating the vault key there is not supported yet: see docs/deploy.md.',
    );
  }
  if (location.source === 'env' && !newKeyHex) {
    throw new AppError(
      'conflict',
      `The vault master key comes from ${ENV_KEY}, which the daemon cannot change. Put a new key (\`openssl rand -hex 32\`) in an environment variable, ` +
        `run \`svc vault rotate-key --new-key-env <VAR>\`, then set ${ENV_KEY} to the new key before the daemon next starts.`,
    );
  }
  if (vault.rotating) throw new AppError('conflict', 'A vault key rotation is already under way.');
  vault.rotating = true;
  try {
    const next = newKeyHex ? Buffer.from(newKeyHex, 'hex') : randomBytes(MASTER_KEY_BYTES);
    const nextKeys = deriveKeys(next, vault.projectId);
    if (sameCheck(nextKeys.check, vault.keys.check)) throw new AppError('invalid_request', 'The new vault key is the current one.');
    if (location.source !== 'env') {
      try {
        await location.writeNext(next);
      } catch (err) {
        throw new AppError('unavailable', `Cannot store the new vault key in ${location.where}: ${(err as Error).message}. Nothing was changed.`);
      }
    }
    let rotated: number;
    try {
      rotated = await app.events.write(async () => {
        const rows = await store.allSealed(app.db);
        for (const row of rows) {
          const plain = Buffer.from(JSON.stringify(openRow(app, vault.keys, row)), 'utf8');
          await store.replaceSealed(app.db, { ...row, ...seal(nextKeys.entryKey, place(app, row.agent, row.service), plain) });
        }
        await store.setKeyCheck(app.db, nextKeys.check);
        return rows.length;
      });
    } catch (err) {
      await location.clearNext().catch(() => undefined);
      throw err;
    }
    vault.keys = nextKeys;
    if (location.source !== 'env') {
      try {
        await location.promoteNext(next);
      } catch (err) {
        // The entries are sealed under the new key and it is in the "next" slot: the next start promotes it.
        app.log.error('the vault key rotation could not store the new key; the next start will finish it', { where: location.where, error: (err as Error).message });
      }
    }
    app.log.info('rotated the vault master key', { source: location.source, rotated });
    return { rotated, source: location.source };
  } finally {
    vault.rotating = false;
  }
}
