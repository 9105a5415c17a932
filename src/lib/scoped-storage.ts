import { AsyncLocalStorage } from 'node:async_hooks';

// An AsyncLocalStorage that is on only while one of its scopes is open. On Node 20 a storage once
// entered turns on promise hooks for the whole process, for good, and they cost every promise
// (a fifth of the CPU of a POST, measured; test/daemon.test.ts checks `svc serve` runs without).
// The state's transactions need one (the transaction in progress follows its async call chain),
// so every such storage is switched off again once the last scope of any of them has ended: a
// daemon at rest, and on SQLite every request between two writes, runs without promise hooks.
//
// A callback scheduled inside a scope and run after it may see that scope's store again, once
// another scope turns the storages back on: its users check that what they find is still open.

let open = 0;
const entered = new Set<AsyncLocalStorage<unknown>>();

export class ScopedStorage<T> {
  private readonly als = new AsyncLocalStorage<T>();

  getStore(): T | undefined {
    return this.als.getStore();
  }

  /** Runs `fn` outside any scope of this storage. */
  exit<R>(fn: () => R): R {
    return this.als.exit(fn);
  }

  /** Runs `fn` with `store` for its whole async call chain. */
  async run<R>(store: T, fn: () => Promise<R>): Promise<R> {
    open++;
    entered.add(this.als as AsyncLocalStorage<unknown>);
    try {
      return await this.als.run(store, fn);
    } finally {
      if (--open === 0) {
        for (const a of entered) a.disable();
        entered.clear();
      }
    }
  }
}
