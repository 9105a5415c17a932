import { describe, expect, it, vi } from 'vitest';
import { STATE_MIGRATIONS } from '../../src/state-schema.js';
import { openDatabase } from '../../src/db/open.js';
import { authenticate, authenticateHeader, DigestCache, sha256, type KeyEntry } from '../../src/kernel/auth.js';
import { getTask, insertTask, replaceDependencies } from '../../src/resources/tasks/store.js';

describe('task read', () => {
  it('is one statement, with the dependencies in their order', async () => {
    const db = await openDatabase(':memory:', STATE_MIGRATIONS);
    const now = new Date().toISOString();
    for (const id of ['a', 'b', 'c'])
      await insertTask(db, { id, title: id, description: null, assignTo: null, missionId: null, status: 'pending', priority: 'normal', labels: [], maxRetries: 3, sideEffects: false, now });
    await replaceDependencies(db, 'c', ['b', 'a']);
    const prepare = vi.spyOn(db, 'prepare');
    expect((await getTask(db, 'c'))!.dependsOn).toEqual(['b', 'a']);
    expect((await getTask(db, 'a'))!.dependsOn).toEqual([]);
    expect(await getTask(db, 'missing')).toBeNull();
    // Prepared once, cached by stmt(): a second statement (a separate dependency query) would show here.
    expect(prepare).toHaveBeenCalledTimes(1);
  });
});

describe('DigestCache', () => {
  const keys: KeyEntry[] = [
    { name: 'a', digest: sha256('key-a-0123456789'), source: 'project.json' },
    { name: 'b', digest: sha256('key-b-0123456789'), source: 'project.json' },
  ];

  it('hashes a key that matched only once, and never remembers a wrong key', () => {
    const cache = new DigestCache(8);
    const spy = vi.spyOn(cache, 'remember');
    expect(authenticate(keys, 'key-b-0123456789', cache)!.name).toBe('b');
    expect(authenticate(keys, 'key-b-0123456789', cache)!.name).toBe('b');
    expect(authenticate(keys, 'wrong-key-000000', cache)).toBeNull();
    expect(spy.mock.calls.map((c) => c[0])).toEqual(['key-b-0123456789', 'key-b-0123456789']);
    expect((cache as unknown as { map: Map<string, Buffer> }).map.has('wrong-key-000000')).toBe(false);
    expect((cache as unknown as { map: Map<string, Buffer> }).map.get('key-b-0123456789')).toEqual(sha256('key-b-0123456789'));
  });

  it('by the whole Authorization header: the same answers as parsing it, only matching headers remembered', () => {
    const cache = new DigestCache(8);
    const headers = [
      'Bearer key-a-0123456789',
      'bearer key-b-0123456789',
      'BEARER   key-a-0123456789  ',
      'Bearer key-a-0123456789 extra',
      'Basic key-a-0123456789',
      'key-a-0123456789',
      'Bearer ',
      'Bearer wrong-key-000000',
      '',
    ];
    const parsed = (h: string) => /^Bearer[ ]+(\S+)\s*$/i.exec(h)?.[1];
    for (let round = 0; round < 2; round++) {
      for (const h of headers) expect(authenticateHeader(keys, h, cache)?.name ?? null, h).toBe(authenticate(keys, parsed(h))?.name ?? null);
    }
    expect(authenticateHeader(keys, undefined, cache)).toBeNull();
    expect([...(cache as unknown as { map: Map<string, Buffer> }).map.keys()].sort()).toEqual(['BEARER   key-a-0123456789  ', 'Bearer key-a-0123456789', 'bearer key-b-0123456789']);
    // Remembered, and removed from the keys: it no longer matches.
    expect(authenticateHeader(keys.slice(1), 'Bearer key-a-0123456789', cache)).toBeNull();
  });

  it('stays bounded, and a removed key stops matching even while remembered', () => {
    const cache = new DigestCache(2);
    for (let i = 0; i < 10; i++) cache.remember(`k${i}`, sha256(`k${i}`));
    expect((cache as unknown as { map: Map<string, Buffer> }).map.size).toBeLessThanOrEqual(2);
    expect(authenticate(keys, 'key-a-0123456789', cache)!.name).toBe('a');
    expect(authenticate(keys.slice(1), 'key-a-0123456789', cache)).toBeNull();
  });
});
