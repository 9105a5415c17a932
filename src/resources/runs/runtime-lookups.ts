import type { App } from '../../app.js';
import type { Runtime } from '../agents/runtime.js';
import type { BinaryLookup } from './drivers/detect.js';
import { findRuntime } from './service.js';

// Where this runner last found each runtime's executable. A lookup is a few file system calls,
// each a turn of the event loop: the queue's pass never waits on one, and a run about to start
// reuses one made less than a minute ago (dispatch latency, docs/performance.md, Runs).

/** A runtime's executable, once found, is looked up again after this long. */
const KEPT_MS = 60_000;
const keyOf = (runtime: Pick<Runtime, 'kind' | 'command'>): string => `${runtime.kind}\0${runtime.command ?? ''}`;

export class RuntimeLookups {
  private readonly known = new Map<string, { found: BinaryLookup; at: number }>();
  /** Lookups under way: one per runtime at a time. */
  private readonly looking = new Map<string, Promise<BinaryLookup>>();

  /** `learned`: a lookup canRun() started is over (the queue may be looked at again). */
  constructor(
    private readonly app: App,
    private readonly learned: () => void,
  ) {}

  /**
   * Whether this daemon can run `runtime` (its executable is here), as last looked up; unknown
   * yet: false for now, and `learned` is called once it is known.
   */
  canRun(runtime: Runtime): boolean {
    const known = this.known.get(keyOf(runtime));
    if (known && this.app.clock.now() - known.at < KEPT_MS) return known.found.path !== null;
    void this.lookUp(runtime).finally(this.learned);
    return known ? known.found.path !== null : false;
  }

  /**
   * The runtime's executable for a run about to start: a lookup that found it less than a minute
   * ago, or a new one (one that vanished since fails the spawn, which says so).
   */
  readonly path = (runtime: Runtime): Promise<BinaryLookup> => {
    const known = this.known.get(keyOf(runtime));
    if (known && known.found.path !== null && this.app.clock.now() - known.at < KEPT_MS) return Promise.resolve(known.found);
    return this.lookUp(runtime);
  };

  private lookUp(runtime: Runtime): Promise<BinaryLookup> {
    const key = keyOf(runtime);
    let p = this.looking.get(key);
    if (!p) {
      p = findRuntime(this.app, runtime)
        .catch((err: unknown): BinaryLookup => ({ path: null, looked: [], error: (err as Error).message }))
        .then((found) => (this.known.set(key, { found, at: this.app.clock.now() }), found))
        .finally(() => this.looking.delete(key));
      this.looking.set(key, p);
    }
    return p;
  }
}
