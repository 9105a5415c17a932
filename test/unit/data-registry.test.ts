import { describe, expect, it } from 'vitest';
import { STATE_MIGRATIONS } from '../../src/state-schema.js';
import { openDatabase } from '../../src/db/open.js';
import * as store from '../../src/resources/data/store.js';

// The registry of application databases is cached per state DB (every record request resolves its
// database first); the cache must never answer what the table does not hold.

const row = (name: string, n: number) => ({ id: `0190b5a0-0000-7000-8000-00000000000${n}`, name, schema: { tables: {} }, schemaVersion: 1, createdAt: '2026-11-23T00:00:00.000Z' });

describe('database registry cache', () => {
  it('follows every write: insert, schema change, delete', () => {
    const db = openDatabase(':memory:', STATE_MIGRATIONS);
    expect(store.getByName(db, 'a')).toBeNull();
    store.insertDatabase(db, row('a', 1));
    expect(store.getByName(db, 'a')?.schemaVersion).toBe(1);
    store.setSchema(db, row('a', 1).id, { tables: {} }, 2, '2026-11-24T00:00:00.000Z');
    expect(store.getByName(db, 'a')?.schemaVersion).toBe(2);
    expect(store.getById(db, row('a', 1).id.toUpperCase())?.name).toBe('a');
    store.deleteDatabase(db, row('a', 1).id);
    expect(store.getByName(db, 'a')).toBeNull();
    expect(store.getById(db, row('a', 1).id)).toBeNull();
  });

  it('keeps nothing read inside a transaction that then rolls back', () => {
    const db = openDatabase(':memory:', STATE_MIGRATIONS);
    expect(() =>
      db.transaction(() => {
        store.insertDatabase(db, row('b', 2));
        expect(store.getByName(db, 'b')?.name).toBe('b');
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(store.getByName(db, 'b')).toBeNull();
  });

  it('is per state DB: two daemons in one process do not see each other', () => {
    const one = openDatabase(':memory:', STATE_MIGRATIONS);
    const two = openDatabase(':memory:', STATE_MIGRATIONS);
    store.insertDatabase(one, row('c', 3));
    expect(store.getByName(one, 'c')?.name).toBe('c');
    expect(store.getByName(two, 'c')).toBeNull();
  });
});
