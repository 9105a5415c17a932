import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidAlive } from '../src/lib/proc.js';
import { renderLaunchdPlist, renderSystemdUnit, serviceNames, type ServiceSpec } from '../src/cli/system/service-unit.js';
import { readDaemonInfo, runningDaemon } from '../src/state-dir.js';
import { exited, SVC, svc } from './cli-helpers.js';
import { makeProject, startTestDaemon, type TestDaemon } from './harness.js';
import { tempDir } from './temp.js';

const FAKE_BIN = fileURLToPath(new URL('./fixtures/service/bin', import.meta.url));
const hash8 = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 8);
const has = (cmd: string, args: string[] = ['--version']) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;

describe('the systemd unit', () => {
  const base: ServiceSpec = { project: '/home/ana/shop', node: '/usr/bin/node', script: '/opt/svc/bin/svc', env: { PATH: '/usr/bin:/bin', HOME: '/home/ana' } };

  const cases: { name: string; spec: ServiceSpec; unit: string }[] = [
    {
      name: 'a plain project',
      spec: base,
      unit: `# Written by \`svc service install\` for the project in /home/ana/shop.
# Remove it with \`svc service uninstall\` (stops the daemon, disables and deletes this file).
[Unit]
Description=svc daemon for /home/ana/shop
StartLimitIntervalSec=60
StartLimitBurst=5

[Service]
Type=simple
WorkingDirectory=/home/ana/shop
Environment="PATH=/usr/bin:/bin" "HOME=/home/ana"
ExecStart=/usr/bin/node /opt/svc/bin/svc --project /home/ana/shop serve
Restart=on-failure
RestartSec=2

[Install]
WantedBy=default.target
`,
    },
    {
      name: 'spaces and % in every path',
      spec: { project: '/home/ana/My Projects/100% shop', node: '/opt/node 20/bin/node', script: '/opt/svc %d/bin/svc', env: { PATH: '/opt/node 20/bin:/usr/bin', HOME: '/home/ana %h' } },
      unit: `# Written by \`svc service install\` for the project in /home/ana/My Projects/100% shop.
# Remove it with \`svc service uninstall\` (stops the daemon, disables and deletes this file).
[Unit]
Description=svc daemon for /home/ana/My Projects/100%% shop
StartLimitIntervalSec=60
StartLimitBurst=5

[Service]
Type=simple
WorkingDirectory=/home/ana/My Projects/100%% shop
Environment="PATH=/opt/node 20/bin:/usr/bin" "HOME=/home/ana %%h"
ExecStart="/opt/node 20/bin/node" "/opt/svc %%d/bin/svc" --project "/home/ana/My Projects/100%% shop" serve
Restart=on-failure
RestartSec=2

[Install]
WantedBy=default.target
`,
    },
    {
      name: '$, quotes and backslashes in the project path, no environment',
      spec: { ...base, project: '/srv/a$b "c" d\\e', env: {} },
      unit: `# Written by \`svc service install\` for the project in /srv/a$b "c" d\\e.
# Remove it with \`svc service uninstall\` (stops the daemon, disables and deletes this file).
[Unit]
Description=svc daemon for /srv/a$b "c" d\\e
StartLimitIntervalSec=60
StartLimitBurst=5

[Service]
Type=simple
WorkingDirectory=/srv/a$b "c" d\\e
ExecStart=/usr/bin/node /opt/svc/bin/svc --project "/srv/a$$b \\"c\\" d\\\\e" serve
Restart=on-failure
RestartSec=2

[Install]
WantedBy=default.target
`,
    },
    {
      name: 'the single executable (no node, no bin/svc)',
      spec: { project: '/home/ana/shop', node: '/home/ana/.local/bin/svc', env: { HOME: '/home/ana' } },
      unit: `# Written by \`svc service install\` for the project in /home/ana/shop.
# Remove it with \`svc service uninstall\` (stops the daemon, disables and deletes this file).
[Unit]
Description=svc daemon for /home/ana/shop
StartLimitIntervalSec=60
StartLimitBurst=5

[Service]
Type=simple
WorkingDirectory=/home/ana/shop
Environment="HOME=/home/ana"
ExecStart=/home/ana/.local/bin/svc --project /home/ana/shop serve
Restart=on-failure
RestartSec=2

[Install]
WantedBy=default.target
`,
    },
  ];
  it.each(cases)('is exact for $name', ({ spec, unit }) => {
    expect(renderSystemdUnit(spec)).toBe(unit);
  });

  it.each([
    ['a newline in the project path', { ...base, project: '/home/ana/shop\nExecStartPre=/bin/rm' }, /control character/],
    ['a quote in the node path', { ...base, node: '/opt/"node"/bin/node' }, /quote or a backslash/],
    ['a backslash in the node path', { ...base, node: '/opt/no\\de/bin/node' }, /quote or a backslash/],
    ['a project path ending in a space', { ...base, project: '/home/ana/shop ' }, /ends in a space/],
    ['an environment name with a dash', { ...base, env: { 'A-B': 'x' } }, /not a name/],
  ])('refuses %s', (_name, spec, message) => {
    expect(() => renderSystemdUnit(spec as ServiceSpec)).toThrow(message);
  });

  it('is named after the project: one unit per directory, even for two of the same name', () => {
    expect(serviceNames('/home/ana/My Shop!')).toEqual({ unit: `svc-my-shop-${hash8('/home/ana/My Shop!')}.service`, label: `local.svc.my-shop-${hash8('/home/ana/My Shop!')}` });
    expect(serviceNames('/a/shop').unit).not.toBe(serviceNames('/b/shop').unit);
    expect(serviceNames('/').unit).toBe(`svc-project-${hash8('/')}.service`);
  });

  // systemd itself parses the unit: unbalanced quotes, or an executable it would mangle, fail here.
  it.skipIf(!has('systemd-analyze'))('passes systemd-analyze verify with spaces, %, $ and quotes in its paths', () => {
    const dir = tempDir('svc-unit-');
    const nodeDir = join(dir, 'n o%d$e');
    mkdirSync(nodeDir);
    const node = join(nodeDir, 'node');
    copyFileSync('/bin/true', node);
    chmodSync(node, 0o755);
    const project = join(dir, 'p r%o$j "q" \\x');
    const file = join(dir, serviceNames(project).unit);
    writeFileSync(file, renderSystemdUnit({ project, node, script: join(dir, "s'v c"), env: { HOME: '/h "q" %h' } }));
    const r = spawnSync('systemd-analyze', ['verify', '--man=no', file], { encoding: 'utf8' });
    expect(r.stderr).not.toContain(file);
    expect(r.status, r.stderr).toBe(0);
  });
});

describe('the launchd agent', () => {
  const spec: ServiceSpec = { project: '/Users/ana/R&D <new>', node: '/usr/local/bin/node', script: '/opt/svc/bin/svc', env: { PATH: '/usr/bin', HOME: "/Users/ana's" } };
  const plist = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by \`svc service install\`; remove it with \`svc service uninstall\`. -->
<plist version="1.0">
<dict>
  <key>Label</key><string>local.svc.r-d-new-1234</string>
  <key>ProgramArguments</key>
  <array>
    <string>/usr/local/bin/node</string>
    <string>/opt/svc/bin/svc</string>
    <string>--project</string>
    <string>/Users/ana/R&amp;D &lt;new&gt;</string>
    <string>serve</string>
  </array>
  <key>WorkingDirectory</key><string>/Users/ana/R&amp;D &lt;new&gt;</string>
  <key>EnvironmentVariables</key>
  <dict>
    <key>PATH</key><string>/usr/bin</string>
    <key>HOME</key><string>/Users/ana&apos;s</string>
  </dict>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key><false/>
  </dict>
  <key>StandardOutPath</key><string>/Users/ana/R&amp;D &lt;new&gt;/.svc/logs/service.out</string>
  <key>StandardErrorPath</key><string>/Users/ana/R&amp;D &lt;new&gt;/.svc/logs/service.out</string>
</dict>
</plist>
`;

  it('is exact, XML-escaped, kept alive only after a failure', () => {
    expect(renderLaunchdPlist(spec, 'local.svc.r-d-new-1234')).toBe(plist);
  });

  it('runs the single executable by itself (no bin/svc argument)', () => {
    const exe = renderLaunchdPlist({ ...spec, node: '/usr/local/bin/svc', script: undefined }, 'local.svc.r-d-new-1234');
    expect(exe).toContain('  <array>\n    <string>/usr/local/bin/svc</string>\n    <string>--project</string>\n');
  });

  it.skipIf(!has('python3'))('reads back as the same values with a plist parser', () => {
    const r = spawnSync('python3', ['-c', 'import json,plistlib,sys; print(json.dumps(plistlib.loads(sys.stdin.buffer.read())))'], { input: plist, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      ProgramArguments: [spec.node, spec.script, '--project', spec.project, 'serve'],
      WorkingDirectory: spec.project,
      EnvironmentVariables: spec.env,
      RunAtLoad: true,
      KeepAlive: { SuccessfulExit: false },
    });
  });
});

/** The words of a unit setting as systemd reads what renderSystemdUnit writes: "quoted" with \\ escapes, %% and $$ doubled. */
function unitWords(value: string): string[] {
  return [...value.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!).replace(/%%/g, '%').replace(/\$\$/g, '$'));
}

/** A home, a config dir and a log of the fake systemctl/journalctl/loginctl calls, for one test. */
function sandbox(fake: Record<string, string> = {}) {
  const home = tempDir('svc-home-');
  const log = join(home, 'calls.log');
  const env = { PATH: `${FAKE_BIN}:${process.env.PATH}`, HOME: home, XDG_CONFIG_HOME: join(home, 'cfg'), FAKE_LOG: log, USER: 'tester', ...fake };
  return {
    env,
    unitDir: join(home, 'cfg', 'systemd', 'user'),
    calls: (): string[] => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []),
  };
}

/** The environment the unit is given from a CLI run in that sandbox (the worker's own test env). */
const unitEnv = (env: Record<string, string>) => {
  const all: Record<string, string | undefined> = { ...process.env, ...env };
  const picked: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'XDG_CONFIG_HOME', 'SVC_CONFIG_DIR', 'SVC_KEYCHAIN']) if (all[k]) picked[k] = all[k]!;
  return picked;
};

describe.runIf(process.platform === 'linux')('svc service (fake systemctl, journalctl and loginctl on PATH)', () => {
  let project: string;
  let unit: string;
  beforeAll(() => {
    for (const f of readdirSync(FAKE_BIN)) chmodSync(join(FAKE_BIN, f), 0o755);
    project = realpathSync(makeProject({}, {}));
    // A directory name with a space and a %: quoted and escaped in the unit, found all the same.
    const spaced = join(project, 'my shop 100%');
    mkdirSync(spaced);
    writeFileSync(join(spaced, 'project.json'), '{"name":"shop","server":{"port":0}}');
    project = spaced;
    unit = serviceNames(project).unit;
  });

  it('--dry-run prints the unit for the project and writes nothing', async () => {
    const s = sandbox();
    const r = await svc(['service', 'install', '--dry-run'], { cwd: project, env: s.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(renderSystemdUnit({ project, node: process.execPath, script: SVC, env: unitEnv(s.env) }));
    expect(r.stdout).toContain(`ExecStart=${process.execPath} ${SVC} --project "${project.replace('%', '%%')}" serve\n`);
    expect(r.stdout).toContain('Restart=on-failure\n');
    expect(existsSync(s.unitDir)).toBe(false);
    expect(s.calls()).toEqual([]);

    const json = await svc(['service', 'install', '--dry-run', '--project', project, '--json'], { env: s.env });
    expect(JSON.parse(json.stdout)).toEqual({ name: unit, file: join(s.unitDir, unit), content: r.stdout });
  });

  it('install writes the unit under XDG_CONFIG_HOME, reloads, enables and starts it, and hints at lingering', async () => {
    const s = sandbox();
    const r = await svc(['--project', project, 'service', 'install'], { env: s.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`installed ${unit} (${join(s.unitDir, unit)}) and started it`);
    expect(s.calls()).toEqual([
      `systemctl --user show -p ActiveState,SubState,MainPID,UnitFileState ${unit}`,
      'systemctl --user daemon-reload',
      `systemctl --user enable --now ${unit}`,
      'loginctl show-user tester -p Linger -p State',
    ]);
    expect(readFileSync(join(s.unitDir, unit), 'utf8')).toBe(renderSystemdUnit({ project, node: process.execPath, script: SVC, env: unitEnv(s.env) }));
    expect(r.stderr).toContain('`sudo loginctl enable-linger tester`');

    const lingering = sandbox({ FAKE_LINGER: 'yes' });
    const quiet = await svc(['service', 'install'], { cwd: project, env: lingering.env });
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stderr).toBe('');
  });

  it('install over a running service restarts it only when the unit changed', async () => {
    const s = sandbox({ FAKE_ACTIVE: 'active', FAKE_SUB: 'running', FAKE_PID: '4242', FAKE_LINGER: 'yes' });
    mkdirSync(s.unitDir, { recursive: true });
    writeFileSync(join(s.unitDir, unit), '[Service]\nExecStart=/old/node serve\n');
    expect((await svc(['service', 'install', '--json'], { cwd: project, env: s.env })).code).toBe(0);
    expect(s.calls().filter((c) => c.startsWith('systemctl'))).toEqual([
      `systemctl --user show -p ActiveState,SubState,MainPID,UnitFileState ${unit}`,
      'systemctl --user daemon-reload',
      `systemctl --user enable --now ${unit}`,
      `systemctl --user restart ${unit}`,
    ]);
    const again = await svc(['service', 'install', '--json'], { cwd: project, env: s.env });
    expect(JSON.parse(again.stdout)).toMatchObject({ installed: true, changed: false, name: unit });
    expect(s.calls().filter((c) => c.includes('restart'))).toHaveLength(1);
  });

  it('without a user service manager: exit 1, the enable-linger hint and `svc serve --detach`, nothing written', async () => {
    const s = sandbox({ FAKE_NO_BUS: '1', FAKE_LOGIN: 'none' });
    const r = await svc(['service', 'install'], { cwd: project, env: s.env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('systemctl --user cannot reach a user service manager (Failed to connect to bus: No medium found)');
    expect(r.stderr).toContain('no login session for tester');
    expect(r.stderr).toContain('`sudo loginctl enable-linger tester`');
    expect(r.stderr).toContain('or run the daemon without a service: `svc serve --detach`');
    expect(existsSync(s.unitDir)).toBe(false);

    const json = await svc(['service', 'install', '--json'], { cwd: project, env: s.env });
    expect(JSON.parse(json.stderr)).toEqual({
      code: 'error',
      error: expect.stringContaining('cannot reach a user service manager'),
      hint: expect.stringMatching(/enable-linger tester.*`svc serve --detach`/),
    });

    // With a session (a manager that is only unreachable from here), no linger advice.
    const session = sandbox({ FAKE_NO_BUS: '1' });
    const s2 = await svc(['service', 'install'], { cwd: project, env: session.env });
    expect(s2.code).toBe(1);
    expect(s2.stderr).not.toContain('enable-linger');
    expect(s2.stderr).toContain('XDG_RUNTIME_DIR');
    expect(s2.stderr).toContain('`svc serve --detach`');
  });

  it('status says whether the unit is installed, and asks systemd only when it is', async () => {
    const s = sandbox({ FAKE_ACTIVE: 'active', FAKE_SUB: 'running', FAKE_PID: '4242', FAKE_ENABLED: 'enabled' });
    const none = await svc(['service', 'status'], { cwd: project, env: s.env });
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toMatch(/installed\s+no\n/);
    expect(s.calls()).toEqual([]);

    mkdirSync(s.unitDir, { recursive: true });
    writeFileSync(join(s.unitDir, unit), 'x');
    const r = await svc(['service', 'status', '--json'], { cwd: project, env: s.env });
    expect(JSON.parse(r.stdout)).toEqual({ platform: 'systemd', name: unit, file: join(s.unitDir, unit), installed: true, running: true, state: 'active (running)', pid: 4242, enabled: 'enabled' });
    const human = await svc(['service', 'status'], { cwd: project, env: s.env });
    expect(human.stdout).toMatch(/running\s+yes\n/);
    expect(human.stdout).toMatch(/pid\s+4242\n/);
  });

  it('uninstall asks first, then disables, stops, deletes the unit and reloads', async () => {
    const s = sandbox();
    mkdirSync(s.unitDir, { recursive: true });
    writeFileSync(join(s.unitDir, unit), 'x');
    const refused = await svc(['service', 'uninstall'], { cwd: project, env: s.env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('add --yes to `svc service uninstall`');
    expect(existsSync(join(s.unitDir, unit))).toBe(true);
    expect(s.calls()).toEqual([]);

    const r = await svc(['service', 'uninstall', '--yes'], { cwd: project, env: s.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`stopped and removed ${unit} (${join(s.unitDir, unit)})\n`);
    expect(s.calls()).toEqual([`systemctl --user disable --now ${unit}`, 'systemctl --user daemon-reload']);
    expect(existsSync(join(s.unitDir, unit))).toBe(false);

    const again = await svc(['service', 'uninstall', '--json'], { cwd: project, env: s.env });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ removed: false, name: unit, file: join(s.unitDir, unit) });
  });

  it('logs runs journalctl --user for the unit, with -n and -f passed through', async () => {
    const s = sandbox();
    const r = await svc(['service', 'logs', '-n', '5'], { cwd: project, env: s.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('Nov 26 05:00:00 host node[4242]: a line of the service\n');
    const f = await svc(['service', 'logs', '-f'], { cwd: project, env: s.env });
    expect(f.code, f.stderr).toBe(0);
    expect(s.calls()).toEqual([`journalctl --user -u ${unit} -n 5 --no-pager`, `journalctl --user -u ${unit} -n 50 --no-pager -f`]);
    const failed = await svc(['service', 'logs'], { cwd: project, env: { ...s.env, FAKE_JOURNAL_EXIT: '1' } });
    expect(failed.code).toBe(1);
  });

  it('refuses a directory without project.json', async () => {
    const s = sandbox();
    const r = await svc(['service', 'install', '--project', tmpdir()], { env: s.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no project.json in');
  });

  it('svc status names the service, and points at it when the daemon is down', async () => {
    const s = sandbox({ FAKE_ACTIVE: 'failed', FAKE_SUB: 'failed' });
    mkdirSync(s.unitDir, { recursive: true });
    writeFileSync(join(s.unitDir, unit), 'x');
    const r = await svc(['status'], { cwd: project, env: s.env });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`service: ${unit}: installed, not running: failed; see \`svc service logs\``);
  });

  it('svc status gives up on a service manager that does not answer', async () => {
    const s = sandbox({ FAKE_HANG: '1' });
    mkdirSync(s.unitDir, { recursive: true });
    writeFileSync(join(s.unitDir, unit), 'x');
    const r = await svc(['status'], { cwd: project, env: s.env });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`service: ${unit}: installed; the service manager did not answer`);

    // No user manager at all: said as briefly, without the time the install hint would take.
    const none = sandbox({ FAKE_NO_BUS: '1' });
    mkdirSync(none.unitDir, { recursive: true });
    writeFileSync(join(none.unitDir, unit), 'x');
    const r2 = await svc(['status'], { cwd: project, env: none.env });
    expect(r2.stderr).toContain(`service: ${unit}: installed; the service manager did not answer`);
    expect(none.calls()).toEqual([`systemctl --user show -p ActiveState,SubState,MainPID,UnitFileState ${unit}`]);
  });

  it('what the unit runs starts the daemon with the unit environment alone; svc stop and SIGTERM end it with exit 0, which on-failure does not restart', async () => {
    const unitText = (await svc(['service', 'install', '--dry-run'], { cwd: project, env: sandbox().env })).stdout;
    const setting = (k: string) =>
      unitText
        .split('\n')
        .find((l) => l.startsWith(`${k}=`))!
        .slice(k.length + 1);
    const [node, ...args] = unitWords(setting('ExecStart'));
    const env = Object.fromEntries(unitWords(setting('Environment')).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]));
    const cwd = setting('WorkingDirectory').replace(/%%/g, '%');
    expect(cwd).toBe(project);
    expect(args).toEqual([SVC, '--project', project, 'serve']);
    for (const how of ['svc stop', 'SIGTERM']) {
      const child = spawn(node!, args, { cwd, env, stdio: 'ignore' });
      try {
        await until(`the daemon (${how})`, () => runningDaemon(project)?.pid === child.pid);
        if (how === 'svc stop') expect((await svc(['stop'], { cwd: project })).code).toBe(0);
        else child.kill('SIGTERM');
        expect(await exited(child), how).toBe(0);
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    }
  }, 60_000);

  describe('with a daemon running', () => {
    let d: TestDaemon;
    beforeAll(async () => {
      d = await startTestDaemon();
    }, 60_000);
    afterAll(async () => {
      await d?.close();
    });

    it('svc status has a service line, and a service field in --json', async () => {
      const root = realpathSync(d.root);
      const name = serviceNames(root).unit;
      const s = sandbox({ FAKE_ACTIVE: 'active', FAKE_SUB: 'running', FAKE_PID: String(process.pid) });
      const before = await svc(['status', '--json'], { cwd: root, env: s.env });
      expect(before.code, before.stderr).toBe(0);
      expect(JSON.parse(before.stdout).service).toEqual({ name, installed: false, running: false });
      const human = await svc(['status'], { cwd: root, env: s.env });
      expect(human.stdout).toMatch(new RegExp(`service\\s+${name}: not installed\\n`));

      mkdirSync(s.unitDir, { recursive: true });
      writeFileSync(join(s.unitDir, name), 'x');
      const after = await svc(['status', '--json'], { cwd: root, env: s.env });
      expect(JSON.parse(after.stdout).service).toEqual({ name, installed: true, running: true });
      expect((await svc(['status'], { cwd: root, env: s.env })).stdout).toContain(`${name}: installed, running (pid ${process.pid})`);
    });

    it('install refuses while a daemon runs outside the service', async () => {
      const s = sandbox();
      const r = await svc(['service', 'install'], { cwd: d.root, env: s.env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`svc already runs for this project outside the service (pid ${process.pid})`);
      expect(r.stderr).toContain('`svc stop` first');
      expect(existsSync(s.unitDir)).toBe(false);
    });
  });
});

// A real user manager: on a desktop, or in CI that starts one. A container without systemd has none.
const userSystemd = (() => {
  if (process.platform !== 'linux') return `not Linux (${process.platform})`;
  const r = spawnSync('systemctl', ['--user', 'is-system-running'], { encoding: 'utf8', timeout: 5000 });
  const state = (r.stdout ?? '').trim();
  return ['running', 'degraded'].includes(state) ? null : `no user systemd here (systemctl --user is-system-running: ${state || r.stderr?.trim() || r.error?.message})`;
})();

/** Polls until `ok` or the deadline: the service manager starts and restarts the daemon on its own time. */
async function until<T>(what: string, probe: () => T | null | undefined | false | Promise<T | null | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('svc service with the real user systemd', () => {
  if (userSystemd) {
    it.skip(`skipped: ${userSystemd}`, () => undefined);
    return;
  }
  it('install → running → svc tasks ls → a crash is restarted, svc stop is not → uninstall', async () => {
    // The manager reads units from its own config dir, not the test's temp one: the unit goes there
    // (and is removed at the end). Everything else, the vault key included, stays in the test home.
    const managerEnv = Object.fromEntries(
      spawnSync('systemctl', ['--user', 'show-environment'], { encoding: 'utf8' })
        .stdout.split('\n')
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    const env = { XDG_CONFIG_HOME: managerEnv.XDG_CONFIG_HOME || join(managerEnv.HOME!, '.config') };
    const root = realpathSync(makeProject({ server: { host: '127.0.0.1', port: 0 } }));
    const unit = serviceNames(root).unit;
    try {
      const install = await svc(['service', 'install'], { cwd: root, env });
      expect(install.code, install.stderr).toBe(0);
      const first = await until('the daemon to start', () => runningDaemon(root));
      const ls = await until('svc tasks ls', async () => {
        const r = await svc(['tasks', 'ls'], { cwd: root, env });
        return r.code === 0 && r;
      });
      expect(ls.stdout).toContain('no tasks');
      const status = await svc(['status', '--json'], { cwd: root, env });
      expect(JSON.parse(status.stdout).service).toEqual({ name: unit, installed: true, running: true });

      process.kill(first.pid, 'SIGKILL');
      const second = await until('the restart after a crash', () => {
        const info = readDaemonInfo(root);
        return info && info.pid !== first.pid && pidAlive(info.pid) && info;
      });
      const stop = await svc(['stop'], { cwd: root, env });
      expect(stop.code, stop.stderr).toBe(0);
      expect(pidAlive(second.pid)).toBe(false);
      // Once systemd has seen the exit: a restart would show as "activating (auto-restart)".
      const after = await until('systemd to see the clean stop', async () => {
        const s = JSON.parse((await svc(['service', 'status', '--json'], { cwd: root, env })).stdout);
        return !['active (running)', 'deactivating (stop-sigterm)'].includes(s.state) && s;
      });
      expect(after).toMatchObject({ installed: true, running: false, state: 'inactive (dead)' });
    } finally {
      const un = await svc(['service', 'uninstall', '--yes'], { cwd: root, env });
      expect(un.code, un.stderr).toBe(0);
      expect(existsSync(join(env.XDG_CONFIG_HOME, 'systemd', 'user', unit))).toBe(false);
    }
  }, 120_000);
});
