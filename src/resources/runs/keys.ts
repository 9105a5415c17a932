import { randomBytes } from 'node:crypto';
import { sha256, type KeyEntry } from '../../kernel/auth.js';

/**
 * The API keys minted for live runs, one per run, held only here (as digests) and only while the
 * run lives: the agent's CLI reaches svc (MCP, REST) with it, and from the moment the run ends it
 * is answered 401. It authenticates as the agent's name, so notes it writes are the agent's, and
 * carries its run's id, so a permission it asks for is its run's (tools/permissions.ts). Per
 * daemon: the runner that started a run is the one its CLI talks to (SVC_URL).
 */
export class RunKeys {
  private readonly byRun = new Map<string, KeyEntry>();
  private list: KeyEntry[] = [];

  /** `onChange` hears every mint and revoke (the daemon's KeyRing rebuilds the key list it authenticates with). */
  constructor(private readonly onChange: (revokedDigest: string | null) => void) {}

  mint(runId: string, agent: string): string {
    const key = `svc_run_${randomBytes(32).toString('base64url')}`;
    this.byRun.set(runId, { name: agent, digest: sha256(key), source: 'run', runId });
    this.list = [...this.byRun.values()];
    this.onChange(null);
    return key;
  }

  revoke(runId: string): void {
    const entry = this.byRun.get(runId);
    if (!entry) return;
    this.byRun.delete(runId);
    this.list = [...this.byRun.values()];
    this.onChange(entry.digest.toString('hex'));
  }

  entries(): readonly KeyEntry[] {
    return this.list;
  }
}
