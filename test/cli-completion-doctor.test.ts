import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { checkNode, type CheckResult } from '../src/cli/system/doctor.js';
import { agentCli } from './agent-clis.js';
import { svc } from './cli-helpers.js';
import { gitProject, makeProject, startTestDaemon, type TestDaemon } from './harness.js';
import { tempDir } from './temp.js';

let d: TestDaemon;
const clis = [agentCli('claude'), agentCli('codex')].filter((c) => c !== null);
beforeAll(async () => {
  // A healthy project for agents: a git repository, and the agent CLIs on the daemon's PATH.
  const root = gitProject();
  // (`claude --version` makes a folder of its own in TMPDIR: one of the test's.)
  d = await startTestDaemon({ root, env: { PATH: [...clis.map((c) => dirname(c.path)), process.env.PATH].join(':'), TMPDIR: tempDir('svc-daemon-tmp-') } });
  expect((await d.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
});
afterAll(async () => {
  await d?.close();
});

describe('svc completion', () => {
  it.each(['bash', 'zsh', 'fish'])('%s: generated from the command tree', async (shell) => {
    const r = await svc(['completion', shell]);
    expect(r.code, r.stderr).toBe(0);
    // Every group and a few of their subcommands and options, as the tree has them.
    for (const word of ['tasks', 'missions', 'approvals', 'vault', 'doctor', 'rotate-key', 'status', 'log-format', 'cascade']) expect(r.stdout).toContain(word);
    expect(r.stdout).toContain('svc completion --names');
    // Arguments that name something the daemon knows are completed from it.
    if (shell === 'fish') expect(r.stdout).toContain("__svc_is \\'tasks show\\'' -a '(svc completion --names tasks 2>/dev/null)'");
    else expect(r.stdout).toContain(`'tasks show') echo '|`);
    if (shell !== 'fish') expect(r.stdout).toMatch(/'tasks show'\) echo '[^']*\|tasks' ;;/);
  });

  it('bash: the script completes commands, subcommands and options in a real bash', async () => {
    const script = (await svc(['completion', 'bash'])).stdout;
    const dir = tempDir('svc-compl-');
    writeFileSync(join(dir, 'svc.bash'), script);
    const complete = (words: string[]) => {
      const cmd = `source ${join(dir, 'svc.bash')}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _svc; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const r = spawnSync('bash', ['-c', cmd], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      return r.stdout.trim().split('\n').filter(Boolean).sort();
    };
    expect(complete(['svc', 't'])).toEqual(['tasks', 'teams']);
    expect(complete(['svc', 'tasks', ''])).toEqual(['add', 'claim', 'edit', 'ls', 'mv', 'retry', 'rm', 'run', 'show']);
    expect(complete(['svc', '--json', 'missions', 'rm', 'x', '--c'])).toEqual(['--cascade']);
    expect(complete(['svc', 'serve', '--de'])).toEqual(['--detach']);
  });

  it('zsh and fish scripts are well-formed where the shell is installed', async () => {
    for (const shell of ['zsh', 'fish']) {
      const script = (await svc(['completion', shell])).stdout;
      const which = spawnSync('sh', ['-c', `command -v ${shell}`], { encoding: 'utf8' });
      if (which.status !== 0) {
        // Not installed here: at least the structure each shell needs.
        expect(script).toMatch(shell === 'zsh' ? /^#compdef svc\n[\s\S]*compadd/ : /complete -c svc -n '__svc_is \\'tasks\\'' -a 'ls'/);
        continue;
      }
      const dir = tempDir('svc-compl-');
      writeFileSync(join(dir, `svc.${shell}`), script);
      expect(spawnSync(shell, ['-n', join(dir, `svc.${shell}`)], { encoding: 'utf8' }).status).toBe(0);
    }
  });

  it('--names lists what the running daemon knows, and nothing (exit 0) when none answers', async () => {
    const t = (await d.api('POST', '/api/v1/tasks', { body: { title: 'complete me' } })).body.data;
    const tasks = await svc(['completion', '--names', 'tasks'], { cwd: d.root });
    expect(tasks.stdout.split('\n')).toContain(t.id.slice(-8));
    const agents = await svc(['completion', '--names', 'agents'], { cwd: d.root });
    expect(agents.stdout).toBe('ana\n');
    const none = await svc(['completion', '--names', 'agents'], { cwd: makeProject() });
    expect(none).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('refuses an unknown shell with exit 2', async () => {
    expect((await svc(['completion', 'tcsh'])).code).toBe(2);
  });
});

describe('svc doctor', () => {
  const doctor = async (cwd: string, env: Record<string, string> = {}) => {
    const r = await svc(['doctor', '--json'], { cwd, env: { SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: join(d.root, '.user-config'), ...env } });
    const results = JSON.parse(r.stdout) as CheckResult[];
    return { code: r.code, by: (check: string) => results.find((x) => x.check === check)!, results };
  };

  it('passes every check against a healthy project and running daemon', async () => {
    const r = await doctor(d.root);
    expect(r.results.map((x) => [x.check, x.status])).toEqual([
      ['node', 'ok'],
      ['project', 'ok'],
      ['state dir', 'ok'],
      ['daemon', 'ok'],
      ['api key', 'ok'],
      ['port', 'ok'],
      ['runs', 'ok'],
      // The pinned CLIs are installed where tests drive them (CI always); a developer may lack them.
      ['agent CLIs', clis.length ? 'ok' : 'skip'],
      ['data', 'ok'],
      ['state', 'ok'],
      ['vault key', 'ok'],
      ['keychain', 'ok'],
    ]);
    expect(r.code).toBe(0);
    const human = await svc(['doctor'], { cwd: d.root, env: { SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: join(d.root, '.user-config') } });
    expect(r.by('runs').detail).toMatch(/agents work in git worktrees of /);
    if (clis.length === 2) expect(r.by('agent CLIs').detail).toMatch(/^claude .*Claude Code.*, codex codex-cli .* \(the daemon's PATH\)$/);
    expect(
      human.stdout
        .trim()
        .split('\n')
        .filter((l) => !l.includes('fix:')),
    ).toHaveLength(12);
    expect(human.stdout).toMatch(/^✓ daemon +pid \d+ answers on http/m);
  });

  it('runs: a project that is not a git repository warns that agents run in place, one at a time; no agent CLI is said, not a fault', async () => {
    const root = makeProject();
    const r = await doctor(root, { PATH: '/nonexistent' });
    expect(r.by('runs')).toMatchObject({ status: 'warn', fix: expect.stringContaining('git init') });
    expect(r.by('runs').detail).toMatch(/not a git repository .*: agents run in the project folder itself, one at a time/);
    expect(r.by('agent CLIs')).toMatchObject({ status: 'skip', detail: expect.stringMatching(/^neither claude nor codex is on this shell's PATH: install one/) });
  });

  it('node: too old fails with the fix', () => {
    expect(checkNode('v18.19.0')).toMatchObject({ status: 'fail', fix: expect.stringContaining('Node 24, 22.12+ or 20.19+') });
    // As package.json's engines: ^20.19.0 || ^22.12.0 || ^24.0.0; a newer line runs, with a warning that it is untested.
    for (const [v, status] of [
      ['v20.18.3', 'fail'],
      ['v20.19.0', 'ok'],
      ['v21.7.3', 'fail'],
      ['v22.11.0', 'fail'],
      ['v22.12.0', 'ok'],
      ['v23.9.0', 'fail'],
      ['v24.0.0', 'ok'],
      ['v24.21.0', 'ok'],
      ['v25.1.0', 'warn'],
      ['v26.0.0', 'warn'],
    ]) {
      expect(checkNode(v!).status, v).toBe(status);
    }
  });

  it('project: none, then an invalid one', async () => {
    const none = await doctor(tempDir('svc-doc-'));
    expect(none.by('project')).toMatchObject({ status: 'fail', fix: expect.stringContaining('svc init') });
    expect(none.code).toBe(1);
    const bad = await doctor(makeProject({ server: { port: -1 } }));
    expect(bad.by('project')).toMatchObject({ status: 'fail', detail: expect.stringContaining('server.port') });
  });

  it('state dir: readable by others fails with the chmod to run', async () => {
    const root = makeProject();
    mkdirSync(join(root, '.svc'));
    chmodSync(join(root, '.svc'), 0o755);
    const r = await doctor(root);
    expect(r.by('state dir')).toMatchObject({ status: 'fail', detail: expect.stringContaining('755'), fix: expect.stringContaining('chmod 700') });
  });

  it('daemon: not running, and a daemon.json left by a dead process', async () => {
    const root = makeProject();
    const stopped = await doctor(root);
    expect(stopped.by('daemon')).toMatchObject({ status: 'fail', detail: 'not running', fix: expect.stringContaining('svc serve --detach') });
    expect(stopped.by('api key').status).toBe('skip');
    mkdirSync(join(root, '.svc'), { mode: 0o700 });
    writeFileSync(join(root, '.svc', 'daemon.json'), JSON.stringify({ pid: 2 ** 22 + 12345, url: 'http://127.0.0.1:9' }));
    expect((await doctor(root)).by('daemon').detail).toContain('which is gone');
  });

  it('api key: a SERVICE_API_KEY the daemon does not know fails', async () => {
    const r = await doctor(d.root, { SERVICE_API_KEY: 'not-a-key-of-this-project' });
    expect(r.by('api key')).toMatchObject({ status: 'fail', detail: 'the key from SERVICE_API_KEY is refused (401)', fix: expect.stringContaining('unset it') });
  });

  it('port: taken by another process fails; free passes', async () => {
    const other: Server = createServer();
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
    const port = (other.address() as { port: number }).port;
    try {
      const busy = await doctor(makeProject({ server: { host: '127.0.0.1', port } }));
      expect(busy.by('port')).toMatchObject({ status: 'fail', detail: expect.stringContaining('in use by another process'), fix: expect.stringContaining('--port 0') });
    } finally {
      await new Promise((r) => other.close(r));
    }
    const free = await doctor(makeProject({ server: { host: '127.0.0.1', port } }));
    expect(free.by('port')).toMatchObject({ status: 'ok', detail: expect.stringContaining('is free') });
  });

  it('port: a daemon running on a port of its own (--port 0) passes, the busy server.port only warns', async () => {
    const other: Server = createServer();
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
    const port = (other.address() as { port: number }).port;
    // The test daemon listens on a free port whatever server.port says, as `svc serve --port 0` does.
    const own = await startTestDaemon({ config: { server: { host: '127.0.0.1', port } } });
    try {
      const r = await doctor(own.root);
      expect(r.by('daemon').status).toBe('ok');
      expect(r.by('port')).toMatchObject({ status: 'warn', detail: expect.stringContaining(`the daemon runs on ${own.url}`), fix: expect.stringContaining('server.port') });
      expect(r.code).toBe(0);
    } finally {
      await own.close();
      await new Promise((res) => other.close(res));
    }
  });

  it("vault key: the running daemon's own; one in this shell that does not open the entries fails, or is the restart warning while the daemon runs", async () => {
    expect((await d.api('POST', '/api/v1/vault/entries', { body: { agent: 'ana', service: 'mail', type: 'api_key', credentials: { k: 'v' } } })).status).toBe(200);
    const ok = await doctor(d.root);
    expect(ok.by('vault key')).toMatchObject({ status: 'ok', detail: expect.stringContaining('opens the vault (1 entry)') });
    expect(ok.by('restart')).toBeUndefined();
    // The daemon holds the key that opened its vault: a wrong one in this shell does not make it ✗,
    // but a daemon started from here (svc restart) would not open the vault.
    const wrong = await doctor(d.root, { SVC_VAULT_KEY: 'ab'.repeat(32) });
    expect(wrong.by('vault key')).toMatchObject({ status: 'ok', detail: expect.stringContaining('opens the vault (1 entry)') });
    expect(wrong.by('restart')).toMatchObject({
      status: 'warn',
      detail: expect.stringContaining('vault key: the key from env (SVC_VAULT_KEY) does not open the 1 vault entries'),
      fix: expect.stringContaining('envFile'),
    });
    expect(wrong.code).toBe(0);
    // With no daemon running, the shell's key is the one the next start would use.
    const stopped = await startTestDaemon({ keepRoot: true });
    expect((await stopped.api('POST', '/api/v1/agents', { body: { name: 'x' } })).status).toBe(201);
    expect((await stopped.api('POST', '/api/v1/vault/entries', { body: { agent: 'x', service: 'mail', type: 'api_key', credentials: { k: 'v' } } })).status).toBe(200);
    await stopped.close();
    const cold = await doctor(stopped.root, { SVC_CONFIG_DIR: join(stopped.root, '.user-config'), SVC_VAULT_KEY: 'ab'.repeat(32) });
    expect(cold.by('vault key')).toMatchObject({ status: 'fail', detail: expect.stringContaining('does not open the 1 vault entries'), fix: expect.stringContaining('SVC_VAULT_KEY') });
  });

  it('keychain: not looked at when the vault key comes from SVC_VAULT_KEY (no false warning)', async () => {
    const root = makeProject();
    const r = await doctor(root, { SVC_KEYCHAIN: 'on', DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus', SVC_VAULT_KEY: 'cd'.repeat(32) });
    expect(r.by('keychain')).toMatchObject({ status: 'ok', detail: 'not used: the vault key comes from SVC_VAULT_KEY' });
  });

  it('keychain: unused with SVC_KEYCHAIN=off; unavailable is a warning with the file fallback named', async () => {
    expect((await doctor(d.root)).by('keychain')).toMatchObject({ status: 'ok', detail: expect.stringContaining('SVC_KEYCHAIN=off') });
    const gone = await doctor(d.root, { SVC_KEYCHAIN: 'on', DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus' });
    const k = gone.by('keychain');
    expect(['ok', 'warn']).toContain(k.status);
    if (k.status === 'warn') {
      expect(k.detail).toContain('kept in a 0600 file instead');
      expect(k.detail.split('\n')).toHaveLength(1);
    }
  });
});

describe("svc doctor: the Postgres provider's server", () => {
  const pgUrl = inject('pgUrl');
  const check = async (config: Record<string, unknown>, env: Record<string, string> = {}) => {
    const r = await svc(['doctor', '--json'], { cwd: makeProject({ data: config }), env: { SVC_KEYCHAIN: 'off', ...env } });
    return { out: r.stdout, result: (JSON.parse(r.stdout) as CheckResult[]).find((x) => x.check === 'data')! };
  };

  it.skipIf(!pgUrl)("connects with SVC_DATA_URL, names the version and the role's rights, and never shows the password", async () => {
    const password = decodeURIComponent(new URL(pgUrl).password);
    const ok = await check({ provider: 'postgres' }, { SVC_DATA_URL: pgUrl });
    expect(ok.result).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/^PostgreSQL \d+ at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/postgres: role postgres may create roles and schemas/),
    });
    expect(ok.out).not.toContain(password);

    const wrong = new URL(pgUrl);
    wrong.password = 'not-the-password';
    const refused = await check({ provider: 'postgres' }, { SVC_DATA_URL: wrong.toString() });
    expect(refused.result).toMatchObject({ status: 'fail', detail: expect.stringContaining('the server refused the login') });
    expect(refused.out).not.toContain('not-the-password');

    // A role that may log in but not create roles: the right it lacks is named.
    const pg = (await import('pg')).default;
    const admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    await admin.query("DROP ROLE IF EXISTS doctor_weak; CREATE ROLE doctor_weak LOGIN PASSWORD 'weak-password-123'");
    await admin.end();
    const weak = new URL(pgUrl);
    weak.username = 'doctor_weak';
    weak.password = 'weak-password-123';
    const lacking = await check({ provider: 'postgres', url: weak.toString() });
    expect(lacking.result).toMatchObject({ status: 'fail', detail: expect.stringContaining('may not create roles (CREATEROLE)'), fix: expect.stringContaining('docs/data.md') });
    expect(lacking.out).not.toContain('weak-password-123');
  });

  it.skipIf(!pgUrl)("a healthy daemon on PostgreSQL, from a shell without its variables: the daemon's own ✓ state, data and vault key, and a restart warning the settings file mends", async () => {
    const { freshStateDatabase } = await import('./state-pg.js');
    const vars = { SVC_STATE_URL: await freshStateDatabase(), SVC_DATA_URL: pgUrl, SVC_VAULT_KEY: randomBytes(32).toString('base64') };
    const daemon = await startTestDaemon({ config: { state: { provider: 'postgres' }, data: { provider: 'postgres' } }, env: vars, keepRoot: true });
    const password = decodeURIComponent(new URL(pgUrl).password);
    const userConfig = join(daemon.root, '.user-config');
    try {
      // No variable in this shell, and a keychain that does not answer: neither matters to the daemon.
      const env = { SVC_STATE_URL: '', SVC_DATA_URL: '', SVC_VAULT_KEY: '', SVC_KEYCHAIN: 'on', DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus', SVC_CONFIG_DIR: userConfig };
      const look = async () => {
        const r = await svc(['doctor', '--json'], { cwd: daemon.root, env });
        expect(r.stdout).not.toContain(password);
        const results = JSON.parse(r.stdout) as CheckResult[];
        return { code: r.code, by: (check: string) => results.find((x) => x.check === check) };
      };
      const r = await look();
      expect(r.by('state')).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^PostgreSQL at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/state_\w+, schema version \d+$/) });
      expect(r.by('data')).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^PostgreSQL \d+ at postgres:\/\/postgres:\*\*\*@/) });
      expect(r.by('vault key')).toMatchObject({ status: 'ok', detail: 'from env (SVC_VAULT_KEY); opens the vault (0 entries)' });
      expect(r.by('api keys')).toMatchObject({ status: 'ok', detail: 'the one daemon on this state accepts the same keys as this project' });
      expect(r.by('keychain')).toMatchObject({ status: 'ok', detail: expect.stringContaining('not used: the state is shared') });
      expect(r.by('restart')).toMatchObject({ status: 'warn', detail: expect.stringContaining('SVC_STATE_URL') });
      expect(r.by('restart')!.detail).toContain('SVC_DATA_URL');
      expect(r.code).toBe(0);

      // The three in the project's settings file in the user's config dir: a daemon started from here would start.
      mkdirSync(join(userConfig, 'projects'), { recursive: true });
      const file = join(userConfig, 'projects', 'test-project.env');
      writeFileSync(
        file,
        Object.entries(vars)
          .map(([k, v]) => `${k}='${v}'`)
          .join('\n') + '\n',
        { mode: 0o600 },
      );
      const mended = await look();
      expect(mended.by('restart')).toBeUndefined();
      expect(mended.by('settings')).toBeUndefined(); // the daemon's view: it was started with the variables themselves
      // Without the daemon, the same checks are made from this shell and the file.
      await daemon.close();
      const cold = await look();
      expect(cold.by('settings')).toMatchObject({ status: 'ok', detail: `${file} gives SVC_STATE_URL, SVC_DATA_URL, SVC_VAULT_KEY` });
      for (const check of ['state', 'data', 'vault key']) expect(cold.by(check)?.status, check).toBe('ok');
    } finally {
      await daemon.close();
    }
  });

  it('says what is missing when no URL is set, and when nothing answers', async () => {
    expect((await check({ provider: 'postgres' })).result).toMatchObject({ status: 'fail', detail: expect.stringContaining('there is no server URL'), fix: expect.stringContaining('SVC_DATA_URL') });
    const down = await check({ provider: 'postgres' }, { SVC_DATA_URL: 'postgres://svc:secret-pw@127.0.0.1:1/app' });
    expect(down.result).toMatchObject({ status: 'fail', detail: expect.stringContaining('Cannot use PostgreSQL at postgres://svc:***@127.0.0.1:1/app: the connection was refused') });
    expect(down.out).not.toContain('secret-pw');
  });
});
