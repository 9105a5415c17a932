import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, chmodSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../src/events/outbox.js';
import type { EventName } from '../src/events/registry.js';
import { NOTIFY_SERVICE } from '../src/resources/notify/command.js';
import { serviceNames } from '../src/cli/system/service-unit.js';
import { exited, startReady, SVC, svc, svcAgainst } from './cli-helpers.js';
import { FakeClock } from './fake-clock.js';
import { eventually, makeProject, startTestDaemon, until, type TestDaemon } from './harness.js';
import { tempDir } from './temp.js';

// Issue 32 item 6: what needs a person becomes one event, attention:needed, written with the event
// it follows; `svc notify run` shows it on the desktop through a stub notify-send (or osascript)
// on PATH that records its arguments; `svc notify install` makes that a user service.

const STUBS = fileURLToPath(new URL('./fixtures/notify/bin', import.meta.url));
const FAKE_AGENT = fileURLToPath(new URL('./fixtures/runs/fake-agent.mjs', import.meta.url));
const FAKE_SYSTEMD = fileURLToPath(new URL('./fixtures/service/bin', import.meta.url));

let d: TestDaemon;
// The daemon's clock stands still: a run that failed with retries left is not retried during the file.
const clock = new FakeClock(Date.now());
beforeAll(async () => {
  for (const dir of [STUBS, FAKE_SYSTEMD]) for (const f of readdirSync(dir)) chmodSync(join(dir, f), 0o755);
  d = await startTestDaemon({ clock, env: { PATH: process.env.PATH! } });
});
afterAll(async () => {
  await d?.close();
});

const app = () => d.daemon.app;
const post = async (path: string, body: unknown) => {
  const r = await d.api('POST', path, { body });
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body.data;
};
const eventsAfter = async (id: number): Promise<StoredEvent[]> => await app().events.since(id, 1_000);
const attentionAfter = async (id: number) => (await eventsAfter(id)).filter((e) => e.name === 'attention:needed');

describe('attention:needed', () => {
  it('follows an approval request in its transaction: the next id, its source named', async () => {
    const before = await app().events.lastId();
    const task = await post('/api/v1/tasks', { title: 'Ship it' });
    const approval = await post('/api/v1/approvals', { taskId: task.id, requestedBy: 'alice', title: 'Deploy to prod?' });
    const events = await eventsAfter(before);
    const requested = events.find((e) => e.name === 'approval:requested')!;
    const [attention, ...more] = await attentionAfter(before);
    expect(more).toEqual([]);
    expect(attention!.id).toBe(requested.id + 1);
    expect(attention!.data).toEqual({
      reason: 'approval',
      title: 'Approval needed: Deploy to prod?',
      message: `asked by alice · svc approvals show ${approval.id.slice(-8)}`,
      taskId: task.id,
      runId: null,
      agent: null,
      approvalId: approval.id,
      link: '/#/approvals',
      source: { event: 'approval:requested', id: requested.id },
      detail: requested.data,
    });
  });

  it('a permission approval (kind permission): its run and agent', async () => {
    const before = await app().events.lastId();
    await app().events.write(async () =>
      app().events.emit('approval:requested', {
        approvalId: 'ap-perm',
        kind: 'permission',
        taskId: null,
        missionId: null,
        title: 'Bash: rm -rf build',
        requestedBy: 'alice',
        runId: 'run-perm',
        tool: 'Bash',
      }),
    );
    expect((await attentionAfter(before)).map((e) => e.data)).toEqual([expect.objectContaining({ reason: 'permission', runId: 'run-perm', agent: 'alice', approvalId: 'ap-perm' })]);
  });

  it('is rolled back with the change it follows', async () => {
    const before = await app().events.lastId();
    await expect(
      (async () =>
        await app().events.write(async () => {
          app().events.emit('approval:requested', { approvalId: 'ap-gone', kind: 'task', taskId: null, missionId: null, title: 'never', requestedBy: 'alice', runId: null, tool: null });
          throw new Error('the change fails');
        }))(),
    ).rejects.toThrow('the change fails');
    expect(await eventsAfter(before)).toEqual([]);
  });

  it('follows a task that failed after its last retry (the command runtime), not one with retries left', async () => {
    const r = await d.api('POST', '/api/v1/agents', { body: { name: 'alice', runtime: { kind: 'command', command: FAKE_AGENT } } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const before = await app().events.lastId();
    const last = await post('/api/v1/tasks', { title: 'Last chance', description: '@fail the tests do not pass', assignTo: 'alice', maxRetries: 0 });
    const again = await post('/api/v1/tasks', { title: 'Has retries', description: '@fail not yet', assignTo: 'alice', maxRetries: 2 });
    const finished = async (taskId: string) => (await eventsAfter(before)).find((e) => e.name === 'run:finished' && e.data.taskId === taskId);
    await until('both runs to finish', async () => Boolean((await finished(last.id)) && (await finished(again.id))), 20_000);
    const run = (await finished(last.id))!;
    const attention = await attentionAfter(before);
    expect(attention.map((e) => e.data.taskId)).toEqual([last.id]);
    expect(attention[0]!.data).toMatchObject({
      reason: 'failed',
      title: 'Task failed: Last chance',
      message: `${run.data.error} · no retries left (0 of 0) · svc tasks show ${last.id.slice(-8)}`,
      runId: run.data.runId,
      agent: 'alice',
      link: `/#/runs/${run.data.runId}`,
      source: { event: 'task:transition' },
      detail: { taskId: last.id, to: 'failed' },
    });
    expect(run.data.error).toContain('the tests do not pass');
    // Written in the run's finishing transaction, right after the move it follows.
    const transition = (await eventsAfter(before)).find((e) => e.id === (attention[0]!.data.source as { id: number }).id)!;
    expect(transition).toMatchObject({ name: 'task:transition', data: { taskId: last.id, to: 'failed' } });
    expect(attention[0]!.id).toBe(transition.id + 1);
  });

  // Their events come with other items of issue 32; once they are in the registry these run.
  it('follows budget:exceeded, its data copied through', async () => {
    const before = await app().events.lastId();
    const data = {
      scope: 'agent',
      agent: 'bob',
      period: 'day',
      periodStart: '2030-01-01T00:00:00.000Z',
      periodEnd: '2030-01-02T00:00:00.000Z',
      spent: { tokens: 1200, costUsd: 0 },
      limit: { tokens: 1000, costUsd: null },
      percent: 120,
    };
    await app().events.write(async () => app().events.emit('budget:exceeded' as EventName, data as never));
    expect((await attentionAfter(before)).map((e) => e.data)).toEqual([
      expect.objectContaining({
        reason: 'budget',
        agent: 'bob',
        message: "bob's day budget is spent (120 %); its runs wait until 2030-01-02T00:00:00.000Z or a higher limit (svc budgets)",
        detail: expect.objectContaining(data),
      }),
    ]);
  });

  it('follows runner:paused, its data copied through', async () => {
    const before = await app().events.lastId();
    const data = { provider: 'anthropic', until: new Date(clock.now() + 60_000).toISOString(), runs: 2 };
    await app().events.write(async () => app().events.emit('runner:paused' as EventName, data as never));
    expect((await attentionAfter(before)).map((e) => e.data)).toEqual([expect.objectContaining({ reason: 'paused', detail: expect.objectContaining(data) })]);
  });
});

/** A `svc notify run` against the test daemon, with the stubs first on PATH; resolves once it is ready. */
async function notifyRun(args: string[] = [], env: Record<string, string> = {}) {
  const dir = tempDir('svc-notify-');
  const log = join(dir, 'notify.jsonl');
  const n = await startReady(['--url', d.url, '--api-key', d.key, 'notify', 'run', ...args], {
    cwd: dir,
    env: { SERVICE_API_KEY: '', SVC_URL: '', PATH: `${STUBS}:${process.env.PATH}`, NOTIFY_LOG: log, ...env },
  });
  const calls = (): { cmd: string; args: string[] }[] =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];
  return { ...n, dir, calls };
}

const notifyHooks = async () => ((await d.api('GET', '/v1/webhooks')).body.data as { id: string; description: string; events: string[] }[]).filter((w) => w.description.startsWith('svc notify'));

async function stop(child: ChildProcess): Promise<number | null> {
  child.kill('SIGTERM');
  return exited(child);
}

describe('svc notify run', () => {
  it('shows each attention:needed with notify-send, its texts only ever arguments; `svc notify test`; its webhook gone at the end, and a dead one removed at the start', async () => {
    // What a receiver killed with -9 leaves behind: its webhook, its pid gone.
    const stale = await post('/v1/webhooks', { url: 'http://127.0.0.1:9/', events: ['attention:needed'], description: 'svc notify (pid 999999999); removed when it stops' });
    const n = await notifyRun();
    try {
      expect(n.err()).toContain(`removed webhook ${stale.id} of a svc notify that is gone (pid 999999999)`);
      const hooks = await notifyHooks();
      expect(hooks).toHaveLength(1);
      expect(hooks[0]!.events).toEqual(['attention:needed']);
      expect(hooks[0]!.description).toBe(`svc notify (pid ${n.child.pid}); removed when it stops`);

      // Run by a shell, either substitution would make this file in the receiver's working directory.
      const marker = join(n.dir, 'pwned');
      const title = 'Deploy $(touch pwned) `touch pwned` "now"; it\'s fine';
      const task = await post('/api/v1/tasks', { title: 'Gated' });
      const approval = await post('/api/v1/approvals', { taskId: task.id, requestedBy: 'alice', title });
      await eventually(() => n.calls().length === 1, 10_000);
      expect(n.calls()).toEqual([
        { cmd: 'notify-send', args: ['--app-name=svc', '--urgency=critical', '--', `Approval needed: ${title}`, `asked by alice · svc approvals show ${approval.id.slice(-8)}\n${d.url}/#/approvals`] },
      ]);
      expect(existsSync(marker)).toBe(false);
      await eventually(() => /attention:needed/.test(n.out()), 5_000);
      expect(n.out()).toMatch(/^\S+Z {2}attention:needed {2}[0-9a-f-]{36} → notify-send\n$/);

      const t = await svcAgainst(d, ['notify', 'test']);
      expect(t.code, t.stderr).toBe(0);
      expect(t.stdout).toBe('sent a test to svc notify; a notification should show now\n');
      await eventually(() => n.calls().length === 2, 10_000);
      expect(n.calls()[1]).toMatchObject({ cmd: 'notify-send', args: ['--app-name=svc', '--urgency=normal', '--', 'svc notify works', expect.any(String)] });

      expect(await stop(n.child)).toBe(0);
      expect(await notifyHooks()).toEqual([]);
      const none = await svcAgainst(d, ['notify', 'test']);
      expect(none.code).toBe(1);
      expect(none.stderr).toContain('no `svc notify` is running');
    } finally {
      n.child.kill('SIGKILL');
    }
  });

  it('--notifier osascript (as on macOS): a fixed script, the texts its arguments', async () => {
    const n = await notifyRun(['--notifier', 'osascript']);
    try {
      await app().events.write(async () =>
        app().events.emit('approval:requested', {
          approvalId: 'ap-osa',
          kind: 'permission',
          taskId: null,
          missionId: null,
          title: '" & (do shell script "id") & "',
          requestedBy: 'alice',
          runId: 'run-osa',
          tool: 'Bash',
        }),
      );
      await eventually(() => n.calls().length === 1, 10_000);
      expect(n.calls()).toEqual([
        {
          cmd: 'osascript',
          args: [
            '-e',
            'on run argv',
            '-e',
            'display notification (item 2 of argv) with title (item 1 of argv)',
            '-e',
            'end run',
            'Permission needed: " & (do shell script "id") & "',
            `asked by alice · svc approvals show ap-osa\n${d.url}/#/approvals`,
          ],
        },
      ]);
    } finally {
      expect(await stop(n.child)).toBe(0);
    }
  });

  it('--print prints the command and runs nothing; a notifier that fails is a 502 the daemon tries again', async () => {
    const p = await notifyRun(['--print']);
    try {
      await app().events.write(async () =>
        app().events.emit('approval:requested', { approvalId: 'ap-print', kind: 'task', taskId: null, missionId: null, title: "it's", requestedBy: 'bob', runId: null, tool: null }),
      );
      await eventually(() => /→ notify-send/.test(p.out()), 10_000);
      expect(p.out()).toContain(`→ notify-send --app-name=svc --urgency=critical -- 'Approval needed: it'\\''s' 'asked by bob · svc approvals show ap-print\n${d.url}/#/approvals'`);
      expect(p.calls()).toEqual([]);
    } finally {
      expect(await stop(p.child)).toBe(0);
    }

    const f = await notifyRun([], { NOTIFY_FAIL: '1' });
    try {
      const [hook] = await notifyHooks();
      await app().events.write(async () =>
        app().events.emit('approval:requested', { approvalId: 'ap-fail', kind: 'task', taskId: null, missionId: null, title: 'x', requestedBy: 'bob', runId: null, tool: null }),
      );
      await eventually(() => /no notification server/.test(f.out()), 10_000);
      expect(f.out()).toContain('→ notify-send exited 1: GDBus.Error: no notification server');
      await until('the daemon to log the 502', async () => {
        const deliveries = (await d.api('GET', `/v1/webhooks/${hook!.id}/deliveries`)).body.data as { lastStatusCode: number | null; attempts: number }[];
        return deliveries.some((x) => x.lastStatusCode === 502);
      });
    } finally {
      expect(await stop(f.child)).toBe(0);
    }
  });

  it('says what is missing: the notifier (with how to install it), or the daemon (--wait waits for it)', async () => {
    const empty = tempDir('svc-no-notifier-');
    const r = await svcAgainst(d, ['notify', 'run'], { env: { PATH: empty } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`notify-send was not found: looked in ${empty} (PATH)`);
    expect(r.stderr).toContain('sudo apt install libnotify-bin');
    expect(await notifyHooks()).toEqual([]);

    const down = await svc(['--url', 'http://127.0.0.1:1', '--api-key', 'k'.repeat(20), 'notify', 'run'], { env: { PATH: `${STUBS}:${process.env.PATH}` } });
    expect(down.code).toBe(3);
    const waiting = spawn(process.execPath, [SVC, '--url', 'http://127.0.0.1:1', '--api-key', 'k'.repeat(20), 'notify', 'run', '--wait'], {
      env: { ...process.env, PATH: `${STUBS}:${process.env.PATH}` },
    });
    let err = '';
    waiting.stderr.on('data', (c) => (err += c));
    try {
      await eventually(() => /waiting for the daemon/.test(err), 10_000);
      expect(waiting.exitCode).toBeNull();
    } finally {
      waiting.kill('SIGTERM');
      await exited(waiting);
    }
  });
});

describe.runIf(process.platform === 'linux')('svc notify install (fake systemctl on PATH)', () => {
  let project: string;
  beforeAll(() => {
    project = realpathSync(makeProject({ server: { port: 0 } }));
  });

  /** A home, a config dir and the fake systemctl's log, with the stubs (or not) on PATH. */
  function sandbox(notifier = true) {
    const home = tempDir('svc-home-');
    const log = join(home, 'calls.log');
    mkdirSync(join(home, 'cfg'));
    const env = { PATH: [FAKE_SYSTEMD, ...(notifier ? [STUBS] : []), '/usr/bin', '/bin'].join(':'), HOME: home, XDG_CONFIG_HOME: join(home, 'cfg'), FAKE_LOG: log, USER: 'tester', FAKE_LINGER: 'yes' };
    return { env, unitDir: join(home, 'cfg', 'systemd', 'user'), calls: (): string[] => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []) };
  }
  const unit = () => serviceNames(project, NOTIFY_SERVICE).unit;

  it('--dry-run prints a unit that runs `svc notify run --wait` for the project, next to the daemon service', async () => {
    const s = sandbox();
    const r = await svc(['--project', project, 'notify', 'install', '--dry-run'], { env: s.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`ExecStart=${process.execPath} ${SVC} --project ${project} notify run --wait\n`);
    expect(r.stdout).toContain(`Description=svc desktop notifications for ${project}\n`);
    expect(r.stdout).toContain('# Remove it with `svc notify uninstall` (stops the desktop notifications, disables and deletes this file).\n');
    expect(unit()).toMatch(/^svc-notify-.+\.service$/);
    expect(unit()).not.toBe(serviceNames(project).unit);
    expect(s.calls()).toEqual([]);
  });

  it('install checks the notifier, writes the unit, enables and starts it; uninstall stops and removes it', async () => {
    const missing = sandbox(false);
    const no = await svc(['--project', project, 'notify', 'install'], { env: missing.env });
    expect(no.code).toBe(1);
    expect(no.stderr).toContain('notify-send was not found');
    expect(missing.calls()).toEqual([]);

    const s = sandbox();
    const r = await svc(['--project', project, 'notify', 'install'], { env: s.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`installed ${unit()} (${join(s.unitDir, unit())}) and started it\n${NOTIFY_SERVICE.installed}\n`);
    expect(s.calls()).toEqual([
      `systemctl --user show -p ActiveState,SubState,MainPID,UnitFileState ${unit()}`,
      'systemctl --user daemon-reload',
      `systemctl --user enable --now ${unit()}`,
      'loginctl show-user tester -p Linger -p State',
    ]);
    expect(readFileSync(join(s.unitDir, unit()), 'utf8')).toContain('notify run --wait');

    const refused = await svc(['--project', project, 'notify', 'uninstall'], { env: s.env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('stop the desktop notifications and remove the service');
    const gone = await svc(['--project', project, 'notify', 'uninstall', '--yes'], { env: s.env });
    expect(gone.code, gone.stderr).toBe(0);
    expect(s.calls().slice(-2)).toEqual([`systemctl --user disable --now ${unit()}`, 'systemctl --user daemon-reload']);
    expect(existsSync(join(s.unitDir, unit()))).toBe(false);
  });
});
