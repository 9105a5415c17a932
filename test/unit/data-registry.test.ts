import { describe, expect, it } from 'vitest';
import { STATE_MIGRATIONS } from '../../src/state-schema.js';
import { openDatabase } from '../../src/db/open.js';
import * as store from '../../src/resources/data/store.js';

// The registry of application databases is cached per state DB (every record request resolves its
// database first); the cache must never answer what the table does not hold.

const row = (name: string, n: number) => ({ id: `0190b5a0-0000-7000-8000-00000000000${n}`, name, schema: { tables: {} }, schemaVersion: 1, createdAt: '2026-11-23T00:00:00.000Z' });

describe('database registry cache', () => {
  it('follows every write: insert, schema change, delete', async () => {
    const db = await openDatabase(':memory:', STATE_MIGRATIONS);
    expect(await store.getByName(db, 'a')).toBeNull();
    await store.insertDatabase(db, row('a', 1));
    expect((await store.getByName(db, 'a'))?.schemaVersion).toBe(1);
    await store.setSchema(db, row('a', 1).id, { tables: {} }, 2, '2026-11-24T00:00:00.000Z');
    expect((await store.getByName(db, 'a'))?.schemaVersion).toBe(2);
    expect((await store.getById(db, row('a', 1).id.toUpperCase()))?.name).toBe('a');
    await store.deleteDatabase(db, row('a', 1).id);
    expect(await store.getByName(db, 'a')).toBeNull();
    expect(await store.getById(db, row('a', 1).id)).toBeNull();
  });

  it('keeps nothing read inside a transaction that then rolls back', async () => {
    const db = await openDatabase(':memory:', STATE_MIGRATIONS);
    await expect(
      (async () =>
        await db.transaction(async () => {
          await store.insertDatabase(db, row('b', 2));
          expect((await store.getByName(db, 'b'))?.name).toBe('b');
          throw new Error('rolled back');
        }))(),
    ).rejects.toThrow('rolled back');
    expect(await store.getByName(db, 'b')).toBeNull();
  });

  it('is per state DB: two daemons in one process do not see each other', async () => {
    const one = await openDatabase(':memory:', STATE_MIGRATIONS);
    const two = await openDatabase(':memory:', STATE_MIGRATIONS);
    await store.insertDatabase(one, row('c', 3));
    expect((await store.getByName(one, 'c'))?.name).toBe('c');
    expect(await store.getByName(two, 'c')).toBeNull();
  });
});
