import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { open, seal, type Sealed } from '../vault/crypto.js';

// Webhook signing secrets must be readable by the daemon (it signs with them) but are never kept in
// the state DB in plaintext (DESIGN section 4): they are sealed with AES-256-GCM under a key of
// their own in .svc/webhooks.key (0600). Not the vault's master key: rotating that must not make
// every webhook unsignable, and a copy of state.sqlite alone reveals no secret.

export interface SecretBox {
  seal(secretId: string, secret: string): Sealed;
  open(secretId: string, s: Sealed): string;
}

const KEY_BYTES = 32;

export function openSecretBox(stateDir: string, projectId: string): SecretBox {
  const file = join(stateDir, 'webhooks.key');
  let key: Buffer;
  if (existsSync(file)) {
    key = Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
    if (key.length !== KEY_BYTES) throw new Error(`${file} does not hold a ${KEY_BYTES}-byte hex key; remove it and rotate every webhook's secret`);
  } else {
    key = randomBytes(KEY_BYTES);
    writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  }
  const place = (secretId: string) => ({ projectId, agent: 'webhook-secret', service: secretId });
  return {
    seal: (id, secret) => seal(key, place(id), Buffer.from(secret, 'utf8')),
    open: (id, s) => open(key, place(id), s).toString('utf8'),
  };
}
