import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseEnvFile, projectEnv, readEnvFile } from '../src/config/env-file.js';
import { makeProject, startTestDaemon } from './harness.js';

// The project's settings file: SVC_STATE_URL, SVC_DATA_URL and SVC_VAULT_KEY in one private file
// that the daemon and the CLI both read, so that a daemon started from any shell runs with them.

const KEY = 'ab'.repeat(32);

describe('parseEnvFile', () => {
  it('reads NAME=value lines: comments, blank lines, export, quotes', () => {
    const text = '# svc\n\nexport SVC_STATE_URL=\'postgres://u:p w@h/db\'\nSVC_DATA_URL = "postgres://a:b@h/d?sslmode=require"\r\nSVC_VAULT_KEY=' + KEY + '\n';
    expect(Object.fromEntries(parseEnvFile(text, 'f'))).toEqual({ SVC_STATE_URL: 'postgres://u:p w@h/db', SVC_DATA_URL: 'postgres://a:b@h/d?sslmode=require', SVC_VAULT_KEY: KEY });
  });

  it('refuses what it does not know, naming the line and the variable, never the value', () => {
    const bad: [string, RegExp][] = [
      ['SVC_URL=http://x\n', /f, line 1: SVC_URL is not one of the variables this file may set \(SVC_STATE_URL, SVC_DATA_URL, SVC_VAULT_KEY\)/],
      ['\nnot a line\n', /f, line 2 is not NAME=value/],
      [`SVC_VAULT_KEY=${KEY}\nSVC_VAULT_KEY=${KEY}\n`, /f, line 2: SVC_VAULT_KEY is set twice/],
      ["SVC_DATA_URL='postgres://u:secret@h/d\n", /f, line 1: the value of SVC_DATA_URL opens a quote it does not close/],
    ];
    for (const [text, message] of bad) {
      const err = (() => {
        try {
          parseEnvFile(text, 'f');
          return null;
        } catch (e) {
          return e as Error;
        }
      })();
      expect(err?.message, text).toMatch(message);
      expect(err?.message).not.toContain('secret');
      expect(err?.message).not.toContain(KEY);
    }
  });
});

describe('the settings file', () => {
  it('is refused when other users may read it (it holds passwords)', () => {
    const root = makeProject({}, { 'svc.env': `SVC_VAULT_KEY=${KEY}\n` });
    const file = join(root, 'svc.env');
    chmodSync(file, 0o640);
    expect(() => readEnvFile(file)).toThrow(`${file} holds passwords and is open to other users (mode 640): run \`chmod 600 ${file}\``);
    chmodSync(file, 0o600);
    expect(readEnvFile(file).get('SVC_VAULT_KEY')).toBe(KEY);
  });

  it("fills in what the environment lacks, from project.json's envFile or the user's config dir", () => {
    const root = makeProject({}, { 'svc.env': `SVC_VAULT_KEY=${KEY}\nSVC_DATA_URL=postgres://file@h/d\n` });
    chmodSync(join(root, 'svc.env'), 0o600);
    const named = projectEnv(root, { name: 'p', envFile: 'svc.env' }, { SVC_DATA_URL: 'postgres://env@h/d', SVC_VAULT_KEY: '' });
    // A variable set in the environment wins; an empty one counts as unset.
    expect(named.env).toMatchObject({ SVC_DATA_URL: 'postgres://env@h/d', SVC_VAULT_KEY: KEY });
    expect(named).toMatchObject({ file: join(root, 'svc.env'), names: ['SVC_VAULT_KEY'] });
    expect(() => projectEnv(root, { name: 'p', envFile: 'missing.env' }, {})).toThrow(/envFile names .*missing\.env, which does not exist/);

    const dir = join(root, '.user-config');
    expect(projectEnv(root, { name: 'team' }, { SVC_CONFIG_DIR: dir })).toMatchObject({ file: null, names: [] });
    mkdirSync(join(dir, 'projects'), { recursive: true });
    writeFileSync(join(dir, 'projects', 'team.env'), 'SVC_STATE_URL=postgres://s@h/state\n', { mode: 0o600 });
    expect(projectEnv(root, { name: 'team' }, { SVC_CONFIG_DIR: dir })).toMatchObject({ file: join(dir, 'projects', 'team.env'), env: { SVC_STATE_URL: 'postgres://s@h/state' } });
    // A name that is not a plain file name is never made into a path.
    expect(projectEnv(root, { name: '../projects/team' }, { SVC_CONFIG_DIR: dir }).file).toBeNull();
  });

  it('gives the daemon its vault key; the environment still wins; a file open to others stops the start', async () => {
    const root = makeProject({ envFile: 'svc.env' }, { 'svc.env': `SVC_VAULT_KEY='${randomBytes(32).toString('base64')}'\n` });
    chmodSync(join(root, 'svc.env'), 0o600);
    const first = await startTestDaemon({ root, keepRoot: true });
    try {
      expect((await first.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
      expect((await first.api('POST', '/api/v1/vault/entries', { body: { agent: 'ana', service: 'mail', type: 'api_key', credentials: { k: 'v' } } })).status).toBe(200);
      const logged = first.logs.join('\n');
      expect(logged).toMatch(/"msg":"settings file","file":"[^"]*svc\.env","names":\["SVC_VAULT_KEY"\]/);
      expect(logged).toMatch(/"msg":"vault master key","source":"env","where":"SVC_VAULT_KEY"/);
      const setup = await first.api('GET', '/api/v1/status/setup');
      expect(setup.body.data.settingsFile).toEqual({ path: join(root, 'svc.env'), names: ['SVC_VAULT_KEY'] });
      expect(setup.body.data.checks.find((c: { check: string }) => c.check === 'vault key').detail).toBe(`from env (SVC_VAULT_KEY in ${join(root, 'svc.env')}); opens the vault (1 entry)`);
    } finally {
      await first.close();
    }
    // Sealed under the file's key: another key in the environment wins, and does not open them.
    await expect(startTestDaemon({ root, keepRoot: true, env: { SVC_VAULT_KEY: KEY } })).rejects.toThrow(/cannot open the existing entries/);
    const again = await startTestDaemon({ root, keepRoot: true });
    await again.close();
    chmodSync(join(root, 'svc.env'), 0o644);
    await expect(startTestDaemon({ root, keepRoot: true })).rejects.toThrow(/svc\.env holds passwords and is open to other users \(mode 644\)/);
  });
});
