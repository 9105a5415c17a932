import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { additionalData, deriveKeys, open, OpenError, sameCheck, seal } from '../../src/resources/vault/crypto.js';

const master = randomBytes(32);
const { entryKey, check } = deriveKeys(master, 'project-1');
const place = { projectId: 'project-1', agent: 'dev', service: 'github' };
const secret = Buffer.from('{"token":"s3cr3t"}');

describe('vault crypto', () => {
  it('opens what it sealed', () => {
    const s = seal(entryKey, place, secret);
    expect(s.nonce).toHaveLength(12);
    expect(s.sealed).toHaveLength(secret.length + 16);
    expect(s.sealed.includes(secret)).toBe(false);
    expect(open(entryKey, place, s)).toEqual(secret);
  });

  it('uses a fresh nonce for every seal', () => {
    const nonces = new Set(Array.from({ length: 50 }, () => seal(entryKey, place, secret).nonce.toString('hex')));
    expect(nonces.size).toBe(50);
  });

  const moved: [string, Partial<typeof place>][] = [
    ['another agent', { agent: 'ops' }],
    ['another service', { service: 'gitlab' }],
    ['another project', { projectId: 'project-2' }],
    ['a shifted boundary', { agent: 'devg', service: 'ithub' }],
  ];
  it.each(moved)('refuses a blob moved to %s', (_name, change) => {
    const s = seal(entryKey, place, secret);
    expect(() => open(entryKey, { ...place, ...change }, s)).toThrow(OpenError);
  });

  it('refuses any flipped bit of the ciphertext, tag or nonce', () => {
    const s = seal(entryKey, place, secret);
    for (let i = 0; i < s.sealed.length; i++) {
      const sealed = Buffer.from(s.sealed);
      sealed[i]! ^= 0x01;
      expect(() => open(entryKey, place, { nonce: s.nonce, sealed })).toThrow(OpenError);
    }
    const nonce = Buffer.from(s.nonce);
    nonce[0]! ^= 0x80;
    expect(() => open(entryKey, place, { nonce, sealed: s.sealed })).toThrow(OpenError);
    expect(() => open(entryKey, place, { nonce: s.nonce, sealed: s.sealed.subarray(0, 10) })).toThrow(OpenError);
  });

  it('refuses another master key', () => {
    const s = seal(entryKey, place, secret);
    expect(() => open(deriveKeys(randomBytes(32), 'project-1').entryKey, place, s)).toThrow(OpenError);
  });

  it('length-prefixes the additional data so fields cannot trade bytes', () => {
    expect(additionalData('p', 'ab', 'c').equals(additionalData('p', 'a', 'bc'))).toBe(false);
    expect(additionalData('p', 'a\u0000', 'b').equals(additionalData('p', 'a', '\u0000b'))).toBe(false);
  });

  it('derives independent keys, per project, and a check that tells keys apart', () => {
    expect(entryKey.equals(check)).toBe(false);
    expect(entryKey.includes(master)).toBe(false);
    expect(sameCheck(deriveKeys(master, 'project-1').check, check)).toBe(true);
    expect(sameCheck(deriveKeys(master, 'project-2').check, check)).toBe(false);
    expect(sameCheck(deriveKeys(randomBytes(32), 'project-1').check, check)).toBe(false);
    expect(() => deriveKeys(randomBytes(16), 'project-1')).toThrow(/32 bytes/);
  });
});
