import { AsyncEntry } from '@napi-rs/keyring';
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEntry } from '../src/resources/vault/service.js';
import { startTestDaemon } from './harness.js';
import { tempDir } from './temp.js';

// Needs a Secret Service. scripts/test-keychain.sh starts gnome-keyring in a private D-Bus session
// and runs this file there with SVC_TEST_KEYCHAIN=1. Under a plain `npm test`, this file runs that
// script itself when the tools are installed, and skips with the reason only when they are not.
const enabled = process.env.SVC_TEST_KEYCHAIN === '1';
const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const tools = has('dbus-run-session') && has('gnome-keyring-daemon');
if (!enabled && !tools) {
  console.log('keychain test skipped: no Secret Service to test against; install gnome-keyring and dbus-x11 (apt) and run `bash scripts/test-keychain.sh`');
}

describe.runIf(!enabled && tools)('keychain test under a private D-Bus session', () => {
  it('scripts/test-keychain.sh passes', () => {
    const script = new URL('../scripts/test-keychain.sh', import.meta.url).pathname;
    const r = spawnSync('bash', [script], { encoding: 'utf8', env: { ...process.env, SVC_TEST_KEYCHAIN: '' }, timeout: 120_000 });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Tests\s+\S*1 passed/);
  }, 130_000);
});

const entry = (account: string) => new AsyncEntry('svc', account, { linux: { store: 'secret-service' } });

describe.skipIf(!enabled)('vault master key in the OS keychain', () => {
  // Made when the tests run, not when the file is collected: a skipped file runs no hook that could remove it.
  let cfg = '';
  beforeAll(() => {
    cfg = tempDir('svc-cfg-');
  });
  const accounts: string[] = [];
  afterAll(async () => {
    for (const a of accounts)
      await entry(a)
        .deletePassword()
        .catch(() => undefined);
    rmSync(cfg, { recursive: true, force: true });
  });

  it('is created in the keychain on first start and read back from it after a restart and a rotation', async () => {
    // No SVC_VAULT_KEY and the keychain allowed (the harness turns it off by default); SVC_CONFIG_DIR so a
    // fallback could not touch the real home.
    const env = { SVC_KEYCHAIN: 'auto', SVC_CONFIG_DIR: cfg };
    const d = await startTestDaemon({ env, keepRoot: true });
    const projectId = d.daemon.app.projectId;
    accounts.push(projectId, `${projectId}:next`);
    const logs = () => d.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logs().find((r) => r.msg === 'vault master key')).toMatchObject({ source: 'keychain', where: `the OS keychain (service "svc", account "${projectId}")` });

    const stored = await entry(projectId).getPassword();
    expect(stored).toMatch(/^[0-9a-f]{64}$/);
    expect(existsSync(join(cfg, 'keys'))).toBe(false);
    expect(d.logs.join('')).not.toContain(stored);
    expect((await d.api('POST', '/api/v1/agents', { body: { name: 'dev' } })).status).toBe(201);
    expect((await d.api('POST', '/api/v1/vault/entries', { body: { agent: 'dev', service: 'github', type: 'api_key', credentials: { token: 'kc' } } })).status).toBe(200);
    await d.close();

    const again = await startTestDaemon({ root: d.root, env, keepRoot: true });
    const againLogs = again.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(againLogs.find((r) => r.msg === 'vault master key')).toMatchObject({ source: 'keychain', entries: 1 });
    expect(againLogs.some((r) => r.msg === 'created the vault master key')).toBe(false);
    expect(await openEntry(again.daemon.app, 'dev', 'github')).toEqual({ token: 'kc' });

    expect((await again.api('POST', '/api/v1/vault/rotate-key', { body: {} })).body).toEqual({ ok: true, data: { rotated: 1, source: 'keychain' } });
    const rotated = await entry(projectId).getPassword();
    expect(rotated).toMatch(/^[0-9a-f]{64}$/);
    expect(rotated).not.toBe(stored);
    expect(await entry(`${projectId}:next`).getPassword()).toBeNull();
    await again.close();

    // The item is the key: losing it is a clear start-up error, not an empty vault.
    const third = await startTestDaemon({ root: d.root, env, keepRoot: true });
    expect(await openEntry(third.daemon.app, 'dev', 'github')).toEqual({ token: 'kc' });
    await third.close();
    await entry(projectId).deletePassword();
    await expect(startTestDaemon({ root: d.root, env, keepRoot: true })).rejects.toThrow(/no vault master key found in the OS keychain .* but the vault holds 1 entries/);
    rmSync(d.root, { recursive: true, force: true });
  });
});
