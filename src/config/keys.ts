import type { KeyEntry } from '../kernel/auth.js';
import { createHash } from 'node:crypto';
import { sha256 } from '../kernel/auth.js';
import type { ProjectConfig } from './schema.js';

/** Every key that opens the API now: project.json entries, SERVICE_API_KEY, and .svc/local.key. */
export function buildKeys(config: ProjectConfig, serviceApiKey: string | undefined, localKey: string | undefined): KeyEntry[] {
  const keys: KeyEntry[] = config.apiKeys.map((k, i) => {
    if (typeof k === 'string') return { name: `apiKeys[${i}]`, digest: sha256(k), source: 'project.json' };
    const digest = k.key !== undefined ? sha256(k.key) : Buffer.from(k.sha256!, 'hex');
    return { name: k.name, digest, grants: k.grants, tools: k.tools, source: 'project.json' };
  });
  if (serviceApiKey) keys.push({ name: 'SERVICE_API_KEY', digest: sha256(serviceApiKey), source: 'SERVICE_API_KEY' });
  if (localKey) keys.push({ name: 'local', digest: sha256(localKey), source: 'local.key' });
  return keys;
}

/**
 * The plaintext of every key that opens the API now, for scrubbing text the daemon did not write
 * (an upstream's error). Keys given only as a sha256 have none here: the daemon never held it.
 */
export function keySecrets(config: ProjectConfig, serviceApiKey: string | undefined, localKey: string | undefined): string[] {
  const out = config.apiKeys.flatMap((k) => (typeof k === 'string' ? [k] : k.key !== undefined ? [k.key] : []));
  if (serviceApiKey) out.push(serviceApiKey);
  if (localKey) out.push(localKey);
  return out;
}

/**
 * What identifies the keys this daemon shares with the others on one state: project.json's keys and
 * SERVICE_API_KEY (their names, digests and rights), not the machine's own local key. Two daemons
 * with different fingerprints let in different callers; `svc doctor` says so.
 */
export function keySetFingerprint(keys: readonly KeyEntry[]): string {
  const lines = keys
    .filter((k) => k.source !== 'local.key')
    .map((k) => JSON.stringify([k.name, k.digest.toString('hex'), k.grants ?? null, k.tools ?? null]))
    .sort();
  return createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 16);
}
