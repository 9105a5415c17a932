import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

// AES-256-GCM sealing of vault entries. Pure functions: no I/O, no state.

export const MASTER_KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
// Bumped if the format ever changes; it is part of the additional data, so an old blob can never
// be read as a new-format one by accident.
const FORMAT = 'svc-vault/aes-256-gcm/v1';

/** The derived keys of one master key for one project. */
export interface VaultKeys {
  /** Seals and opens entries. */
  entryKey: Buffer;
  /** Stored in the state DB to tell, at start, whether a master key is the one that sealed the entries. */
  check: Buffer;
}

/**
 * Derives the entry key and the key-check value with HKDF-SHA256. Distinct `info` labels make them
 * independent: the stored check value reveals nothing about the entry key or the master key.
 */
export function deriveKeys(master: Buffer, projectId: string): VaultKeys {
  if (master.length !== MASTER_KEY_BYTES) throw new Error(`a vault master key is ${MASTER_KEY_BYTES} bytes, not ${master.length}`);
  const salt = Buffer.from(`svc-vault:${projectId}`, 'utf8');
  const derive = (info: string) => Buffer.from(hkdfSync('sha256', master, salt, info, 32));
  return { entryKey: derive(`${FORMAT}/entry-key`), check: derive(`${FORMAT}/key-check`) };
}

export function sameCheck(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The additional data binding a blob to its place: format, project, agent and service, each
 * length-prefixed so that ("ab", "c") and ("a", "bc") can never produce the same bytes.
 */
export function additionalData(projectId: string, agent: string, service: string): Buffer {
  const parts = [FORMAT, projectId, agent, service].map((s) => Buffer.from(s, 'utf8'));
  const out = Buffer.alloc(parts.reduce((n, p) => n + 4 + p.length, 0));
  let at = 0;
  for (const p of parts) {
    at = out.writeUInt32BE(p.length, at);
    at += p.copy(out, at);
  }
  return out;
}

export interface EntryPlace {
  projectId: string;
  agent: string;
  service: string;
}

export interface Sealed {
  nonce: Buffer;
  /** Ciphertext followed by the 16-byte tag. */
  sealed: Buffer;
}

/** Seals with a fresh random 96-bit nonce: never reuse a nonce under one key. */
export function seal(entryKey: Buffer, place: EntryPlace, plaintext: Buffer): Sealed {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', entryKey, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(additionalData(place.projectId, place.agent, place.service));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { nonce, sealed: Buffer.concat([body, cipher.getAuthTag()]) };
}

/** An entry that does not authenticate: altered, moved to another entry, or sealed under another key. */
export class OpenError extends Error {
  constructor() {
    super('authentication failed');
    this.name = 'OpenError';
  }
}

export function open(entryKey: Buffer, place: EntryPlace, s: Sealed): Buffer {
  if (s.nonce.length !== NONCE_BYTES || s.sealed.length < TAG_BYTES) throw new OpenError();
  const decipher = createDecipheriv('aes-256-gcm', entryKey, s.nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(additionalData(place.projectId, place.agent, place.service));
  decipher.setAuthTag(s.sealed.subarray(s.sealed.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(s.sealed.subarray(0, s.sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new OpenError();
  }
}
