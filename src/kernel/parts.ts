import { monotonic } from '../lib/clock.js';

// A daemon is an ordered list of named parts, each started in turn and closed in reverse order:
// the daemon's own (logging, state, HTTP…; src/daemon.ts) and, within its "workers" part, the
// resources' background parts. A part that fails to start closes the ones started before it.

/** What a started part hands back: how to close it. */
export type Close = () => unknown;

export interface Part<C> {
  name: string;
  /** Starts the part; what it returns closes it. A start that throws has cleaned up after itself. */
  start(ctx: C): Close | void | Promise<Close | void>;
}

export interface PartHooks {
  /** A part has started (ms: how long its start took). */
  started?(name: string, ms: number): void;
  /** A part is about to close. */
  closing?(name: string): void;
  /** A part's close threw: reported, and the next part is closed all the same. */
  closeFailed?(name: string, err: unknown): void;
}

export interface Started {
  /** The parts that started, in order. */
  readonly names: readonly string[];
  /** Closes every started part, newest first; resolves once all are closed (a failing close does not stop the others). */
  close(): Promise<void>;
}

/**
 * Starts `parts` in order. When one throws, those already started are closed, newest first, and
 * the error is thrown on; otherwise the returned handle closes them all, newest first.
 */
export async function startParts<C>(parts: readonly Part<C>[], ctx: C, hooks: PartHooks = {}): Promise<Started> {
  const started: { name: string; close: Close | void }[] = [];
  const close = async () => {
    for (let p = started.pop(); p; p = started.pop()) {
      if (!p.close) continue;
      hooks.closing?.(p.name);
      try {
        await p.close();
      } catch (err) {
        hooks.closeFailed?.(p.name, err);
      }
    }
  };
  const names: string[] = [];
  for (const part of parts) {
    const t0 = monotonic();
    let stop: Close | void;
    try {
      stop = await part.start(ctx);
    } catch (err) {
      await close();
      throw err;
    }
    started.push({ name: part.name, close: stop });
    names.push(part.name);
    hooks.started?.(part.name, monotonic() - t0);
  }
  return { names, close };
}
