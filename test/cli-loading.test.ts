import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SVC } from './cli-helpers.js';
import { tempDir } from './temp.js';

// Issue 8 item 2: a client command loads only what it needs. The real binary runs in a child with
// a resolve hook that writes down every module it loads.

const HOOK = fileURLToPath(new URL('./fixtures/log-imports.mjs', import.meta.url));
const DAEMON_ONLY = /better-sqlite3|@napi-rs\/keyring|\/chokidar\/|\/node_modules\/yaml\/|\/dist\/src\/daemon\.js|\/dist\/src\/db\//;

const seen = new Map<string, string[]>();

/** The module URLs `svc ...args` resolves (each command run once per file: child processes are slow). */
function loaded(args: string[]): string[] {
  const cached = seen.get(JSON.stringify(args));
  if (cached) return cached;
  const dir = tempDir('svc-loads-');
  const log = join(dir, 'imports.txt');
  writeFileSync(log, '');
  const r = spawnSync(process.execPath, ['--import', HOOK, SVC, ...args], {
    cwd: dir,
    env: { ...process.env, SVC_TEST_IMPORT_LOG: log, SERVICE_API_KEY: '', SVC_URL: '', SVC_PROJECT: '' },
    encoding: 'utf8',
  });
  expect(r.status, r.stderr).not.toBeNull();
  const urls = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  seen.set(JSON.stringify(args), urls);
  return urls;
}

// An address where nothing answers: the command runs all the way to its request.
const nowhere = ['--url', 'http://127.0.0.1:1', '--api-key', 'k'.repeat(20)];

describe('what a CLI command loads', () => {
  it.each([
    [['--version']],
    [['tasks', 'ls', ...nowhere]],
    [['tasks', 'add', 'x', '--priority', 'high', ...nowhere]],
    [['skills', 'add', 'x', '-d', 'y', '--content', 'z', ...nowhere]],
    [['notify', 'test', ...nowhere]],
    // Completion loads every command group, and still none of the daemon.
    [['completion', 'bash']],
  ])('svc %j loads neither SQLite, the keychain, the file watcher, YAML nor the daemon', (args) => {
    const urls = loaded(args);
    expect(urls.some((u) => u.includes('/dist/bin/svc.js'))).toBe(true);
    expect(urls.filter((u) => DAEMON_ONLY.test(u))).toEqual([]);
  });

  it('loads only the group it runs', () => {
    const urls = loaded(['tasks', 'ls', ...nowhere]);
    expect(urls.some((u) => u.endsWith('/resources/tasks/command.js'))).toBe(true);
    expect(urls.filter((u) => /\/resources\/(agents|missions|vault|skills|playbooks|system)\/command\.js$/.test(u))).toEqual([]);
    expect(urls.filter((u) => /node_modules\/undici\//.test(u))).toEqual([]);
  });

  it('a listing with nothing to check does not even load zod (a third of the start-up budget)', () => {
    for (const args of [['--version'], ['tasks', 'ls', ...nowhere], ['approvals', 'ls', ...nowhere], ['notify', 'test', ...nowhere]]) {
      expect(loaded(args).filter((u) => /\/node_modules\/zod\//.test(u))).toEqual([]);
    }
    // With an option to check, the API's schema (and zod) is loaded.
    expect(loaded(['tasks', 'ls', '--limit', '5', ...nowhere]).some((u) => /\/node_modules\/zod\//.test(u))).toBe(true);
  });

  it('the hook sees a package when a command does load it (YAML for a mission file)', () => {
    const file = join(tempDir('svc-loads-'), 'm.yaml');
    writeFileSync(file, 'name: m\ntasks: []\n');
    expect(loaded(['missions', 'add', file, ...nowhere]).some((u) => /\/node_modules\/yaml\//.test(u))).toBe(true);
  });
});
