import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stmt, type DB } from '../../db/open.js';
import { open, seal, type Sealed } from '../vault/crypto.js';
import { sharedSealed } from '../vault/shared-sealed.js';

// Webhook signing secrets must be readable by the daemon (it signs with them) but are never kept in
// the state DB in plaintext (DESIGN section 4): they are sealed with AES-256-GCM under a key of
// their own in .svc/webhooks.key (0600). Not the vault's master key: rotating that must not make
// every webhook unsignable, and a copy of state.sqlite alone reveals no secret. On a state shared
// by several daemons (where the vault key cannot be rotated) that key is kept in the state, sealed
// under the vault's key, so every daemon signs with the same secrets.

export interface SecretBox {
  seal(secretId: string, secret: string): Sealed;
  open(secretId: string, s: Sealed): string;
}

const KEY_BYTES = 32;

/**
 * Where the box key lives when several daemons share a PostgreSQL state: in the state itself,
 * sealed under the vault's entry key, which every daemon there holds (the same SVC_VAULT_KEY).
 */
export interface SharedBox {
  db: DB;
  entryKey: Buffer;
}

const SHARED_META = 'webhooks.boxKey';

function localKey(file: string): Buffer | null {
  if (!existsSync(file)) return null;
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  if (key.length !== KEY_BYTES) throw new Error(`${file} does not hold a ${KEY_BYTES}-byte hex key; remove it and rotate every webhook's secret`);
  return key;
}

/**
 * The shared box key: the one the state holds, or, the first time, this daemon's own
 * .svc/webhooks.key (a project moved with `svc state import` keeps signing with its secrets) or a
 * new one, recorded in one transaction so that two daemons starting at once agree on one.
 */
async function sharedKey(file: string, projectId: string, shared: SharedBox): Promise<Buffer> {
  return await sharedSealed(shared.db, shared.entryKey, { projectId, agent: 'webhook-box', service: 'key' }, SHARED_META, async () => {
    const own = localKey(file);
    // Secrets already in the state (an imported project) were sealed under a key this daemon
    // lacks: a new one would make them unopenable for good.
    if (!own && (await stmt(shared.db, 'SELECT 1 AS x FROM webhook_secrets LIMIT 1').get())) {
      throw new Error(
        `the state holds webhook secrets sealed under a key it does not keep yet: start first the daemon whose project has that .svc/webhooks.key (where the state was imported), or copy that file to ${file}`,
      );
    }
    return own ?? randomBytes(KEY_BYTES);
  });
}

export async function openSecretBox(stateDir: string, projectId: string, shared?: SharedBox): Promise<SecretBox> {
  const file = join(stateDir, 'webhooks.key');
  let key: Buffer;
  if (shared) {
    key = await sharedKey(file, projectId, shared);
  } else {
    const found = localKey(file);
    if (found) {
      key = found;
    } else {
      key = randomBytes(KEY_BYTES);
      writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    }
  }
  const place = (secretId: string) => ({ projectId, agent: 'webhook-secret', service: secretId });
  return {
    seal: (id, secret) => seal(key, place(id), Buffer.from(secret, 'utf8')),
    open: (id, s) => open(key, place(id), s).toString('utf8'),
  };
}
