import { ScopedStorage } from '../lib/scoped-storage.js';

// A barrier in a transaction: work that starts now and that the transaction's later statements
// wait for. The event log writes an event (and the sink's delivery rows) the moment a service
// emits it, as the service goes on: whatever the service reads after emit() must see those rows,
// as it would if emit() had awaited them. Statements issued from inside the work itself do not
// wait (they are the work).

export interface Gated {
  /** The barrier work in progress (chained, in the order it was started); null when there is none. */
  gate: Promise<void> | null;
  /** Called, in order, right after the transaction commits (DB.afterCommit). */
  after: (() => void)[];
}

/** Runs a committed transaction's afterCommit callbacks; one that throws does not stop the others. */
export function runAfter(tx: Gated): void {
  for (const f of tx.after.splice(0)) {
    try {
      f();
    } catch {
      // A callback's own failure; the commit stands.
    }
  }
}

const inside = new ScopedStorage<Gated>();

/** What a statement of `tx` must wait for first: its barrier work, unless the caller is that work. */
export function gated(tx: Gated): Promise<void> | null {
  return tx.gate !== null && inside.getStore() !== tx ? tx.gate : null;
}

/** The caller is barrier work of `tx` (what it waits for would wait for it). */
export function inBarrier(tx: Gated): boolean {
  return inside.getStore() === tx;
}

/** Waits until `tx` has no barrier work left (the caller's own excepted); rejects with the work's failure. */
export async function settle(tx: Gated): Promise<void> {
  for (let g = gated(tx); g; g = gated(tx)) await g;
}

/**
 * Starts `work` in `tx` now, or once the barrier work started before it is over. A failure of
 * `work` stays on the gate: every later statement of the transaction, and its commit, fail with it.
 */
export function barrier(tx: Gated, work: () => Promise<void>): Promise<void> {
  const run = () => inside.run(tx, work);
  const p = tx.gate ? tx.gate.then(run) : run();
  const g: Promise<void> = p.then(() => {
    if (tx.gate === g) tx.gate = null;
  });
  // Observed by the transaction's end (settle), which fails with it.
  g.catch(() => undefined);
  tx.gate = g;
  return g;
}

/** After a savepoint rolled back: its barrier work is over (awaited) and its failure forgotten. */
export async function dropGate(tx: Gated): Promise<void> {
  if (inside.getStore() === tx) return;
  await tx.gate?.catch(() => undefined);
  tx.gate = null;
}
