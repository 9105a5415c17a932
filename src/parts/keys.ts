import type { KeyEntry } from '../kernel/auth.js';
import { RunKeys } from '../resources/runs/keys.js';

/** The keys the API accepts: the configured ones (rebuilt at each reload) and one per live run. */
export class KeyRing {
  private configured: KeyEntry[] = [];
  private all: KeyEntry[] = [];
  /** One key per live run, minted and revoked by the runner. */
  readonly runs: RunKeys;
  /** Told the keys that remain after a run's key was revoked (event streams of the others end). */
  onRevoked: ((digests: Set<string>) => unknown) | null = null;

  constructor() {
    this.runs = new RunKeys((revoked) => {
      this.all = [...this.configured, ...this.runs.entries()];
      if (revoked) this.onRevoked?.(this.digests());
    });
  }

  /** The configured keys (at start and at each reload). */
  configure(entries: KeyEntry[]): void {
    this.configured = entries;
    this.all = [...entries, ...this.runs.entries()];
  }

  list(): KeyEntry[] {
    return this.all;
  }

  configuredKeys(): KeyEntry[] {
    return this.configured;
  }

  digests(): Set<string> {
    return new Set(this.all.map((k) => k.digest.toString('hex')));
  }
}
