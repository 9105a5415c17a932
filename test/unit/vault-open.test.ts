import { describe, expect, it } from 'vitest';
import { Services, type App } from '../../src/app.js';
import { STATE_MIGRATIONS } from '../../src/state-schema.js';
import { openDatabase } from '../../src/db/open.js';
import { EventLog } from '../../src/events/outbox.js';
import { createLogger } from '../../src/kernel/log.js';
import { systemClock } from '../../src/lib/clock.js';
import { KeychainUnavailable, type Keychain } from '../../src/resources/vault/keychain.js';
import { openVault } from '../../src/resources/vault/keys.js';
import { VAULT, type Vault } from '../../src/resources/vault/live.js';
import { openEntry, saveEntry } from '../../src/resources/vault/service.js';
import { tempDir } from '../temp.js';

/** A keychain that is down until `up` is set, then holds whatever is stored. */
function flakyKeychain(): Keychain & { up: boolean; store: Map<string, string> } {
  const store = new Map<string, string>();
  const kc = {
    up: false,
    store,
    async get(account: string) {
      if (!kc.up) throw new KeychainUnavailable('no Secret Service answered');
      return store.get(account) ?? null;
    },
    async set(account: string, value: string) {
      if (!kc.up) throw new KeychainUnavailable('no Secret Service answered');
      store.set(account, value);
    },
    async delete(account: string) {
      return store.delete(account);
    },
  };
  return kc;
}

describe('openVault', () => {
  it('uses the key file when the keychain, back after an outage, holds a key that cannot open the entries', async () => {
    const db = await openDatabase(':memory:', STATE_MIGRATIONS);
    await db.prepare("INSERT INTO agents (name, fields, created_at, updated_at) VALUES ('dev', '{}', 'x', 'x')").run();
    const env = { SVC_CONFIG_DIR: tempDir('svc-cfg-') };
    const logs: string[] = [];
    const log = createLogger((l) => logs.push(l));
    const keychain = flakyKeychain();

    // First start: the keychain is down, so the key is made in the file and an entry sealed with it.
    const vault = await openVault({ db, projectId: 'p1', env, log, keychain });
    expect(vault.location.source).toBe('file');
    const withVault = (v: Vault): App => {
      const services = new Services();
      services.provide(VAULT, v);
      return { db, events: new EventLog(db, { clock: systemClock }), services, projectId: 'p1', log, clock: systemClock } as unknown as App;
    };
    const app = withVault(vault);
    await saveEntry(app, { agent: 'dev', service: 'gh', type: 'api_key', credentials: { token: 'secret-1' } });

    // Later start: the keychain answers, with a key of its own (set by another tool or an older run).
    keychain.up = true;
    keychain.store.set('p1', 'ab'.repeat(32));
    const again = await openVault({ db, projectId: 'p1', env, log, keychain });
    expect(again.location.source).toBe('file');
    expect(await openEntry(withVault(again), 'dev', 'gh')).toEqual({ token: 'secret-1' });
    expect(logs.some((l) => l.includes('the keychain holds another vault master key'))).toBe(true);
  });
});
