import { AsyncLocalStorage } from 'node:async_hooks';

// An AsyncLocalStorage that is on only while one of its scopes is open. On Node 20 a storage once
// entered turns on promise hooks for the whole process, for good, and they cost every promise
// (a fifth of the CPU of a POST, measured; test/daemon.test.ts checks `svc serve` runs without).
// The state's transactions need one (the transaction in progress follows its async call chain),
// so the storage is switched off again once the last scope has ended: a daemon at rest, and on
// SQLite every request between two writes, runs without promise hooks.
//
// Every ScopedStorage shares one AsyncLocalStorage, whose store is a frame holding each scoped
// storage's value: while hooks are on, each promise made copies one store rather than one per
// storage (a write on PostgreSQL has the state's transaction, the event log's and the barrier's
// open at once, and each storage costs every promise a keyed load and store; docs/performance.md).
//
// A callback scheduled inside a scope and run after it may see that scope's store again, once
// another scope turns the storage back on: its users check that what they find is still open.

type Frame = ReadonlyMap<ScopedStorage<unknown>, unknown>;

const shared = new AsyncLocalStorage<Frame>();
let open = 0;

export class ScopedStorage<T> {
  getStore(): T | undefined {
    return shared.getStore()?.get(this) as T | undefined;
  }

  /** Runs `fn` outside any scope of this storage (the others' scopes stay). */
  exit<R>(fn: () => R): R {
    const frame = shared.getStore();
    if (!frame?.has(this)) return fn();
    const without = new Map(frame);
    without.delete(this);
    return shared.run(without, fn);
  }

  /** Runs `fn` with `store` for its whole async call chain. */
  async run<R>(store: T, fn: () => Promise<R>): Promise<R> {
    const frame = new Map(shared.getStore());
    frame.set(this, store);
    open++;
    try {
      return await shared.run(frame, fn);
    } finally {
      if (--open === 0) shared.disable();
    }
  }
}
