import { executionAsyncResource } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { ScopedStorage } from '../../src/lib/scoped-storage.js';

// The scoped storages share one AsyncLocalStorage (docs/performance.md, "State on PostgreSQL
// without blocking"): each keeps its own value, and a promise made inside their scopes carries one
// store, not one per storage.

/** The stores AsyncLocalStorage put on the current async resource (none where Node keeps them elsewhere, as Node 24 does). */
const storesHere = () => Object.getOwnPropertySymbols(executionAsyncResource()).filter((s) => s.description === 'kResourceStore').length;

/** Whether this Node keeps stores on async resources at all (20 and 22 do; 24's AsyncContextFrame does not): else the count says nothing. */
const storesOnResources = await new ScopedStorage<string>().run('x', async () => {
  await null;
  return storesHere() === 1;
});

describe('ScopedStorage', () => {
  it('keeps each storage its own value through awaits, nested either way', async () => {
    const a = new ScopedStorage<string>();
    const b = new ScopedStorage<string>();
    const seen = await a.run('a1', () =>
      b.run('b1', async () => {
        await null;
        const inner = await a.run('a2', async () => {
          await null;
          return [a.getStore(), b.getStore()];
        });
        return [...inner, a.getStore(), b.getStore()];
      }),
    );
    expect(seen).toEqual(['a2', 'b1', 'a1', 'b1']);
    expect([a.getStore(), b.getStore()]).toEqual([undefined, undefined]);
  });

  it.runIf(storesOnResources)('puts one store on a promise made while two storages are open (where Node keeps stores on promises)', async () => {
    const a = new ScopedStorage<string>();
    const b = new ScopedStorage<string>();
    const count = await a.run('a', () =>
      b.run('b', async () => {
        await null;
        return storesHere();
      }),
    );
    expect(count).toBe(1);
  });

  it('exit leaves the scope of that storage only, for what it schedules too', async () => {
    const a = new ScopedStorage<string>();
    const b = new ScopedStorage<string>();
    const seen = await a.run('a', () =>
      b.run('b', async () => {
        const later = a.exit(() => new Promise<unknown[]>((r) => setImmediate(() => r([a.getStore(), b.getStore()]))));
        const now = a.exit(() => [a.getStore(), b.getStore()]);
        return [now, await later, a.getStore()];
      }),
    );
    expect(seen).toEqual([[undefined, 'b'], [undefined, 'b'], 'a']);
  });

  it('a scope that throws ends, and leaves the others as they were', async () => {
    const a = new ScopedStorage<string>();
    const b = new ScopedStorage<string>();
    const after = await a.run('a', async () => {
      await expect(b.run('b', async () => Promise.reject(new Error('no')))).rejects.toThrow('no');
      return [a.getStore(), b.getStore()];
    });
    expect(after).toEqual(['a', undefined]);
  });
});
