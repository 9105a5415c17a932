import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseWhere, whenText } from '../src/resources/routines/command.js';
import { svcAgainst } from './cli-helpers.js';
import { FakeClock } from './fake-clock.js';
import { startTestDaemon, type TestDaemon } from './harness.js';

describe('svc routines', () => {
  const clock = new FakeClock(Date.parse('2030-01-06T12:00:00.000Z')); // a Sunday
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon({ clock });
    expect((await d.api('POST', '/api/v1/agents', { body: { name: 'lead' } })).status).toBe(201);
  });
  afterAll(async () => {
    await d?.close();
  });
  const svc = async (...args: string[]) => await svcAgainst(d, args);

  it("add prints the next five firing times in the routine's zone", async () => {
    const r = await svc('routines', 'add', 'deps', '--cron', '0 9 * * MON', '--tz', 'Europe/Paris', '--task', 'Update dependencies', '--assign', 'lead', '--label', 'deps');
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('created routine deps; next firings:');
    expect(lines.slice(1).map((l) => l.replace(/, in .*$/, ''))).toEqual([
      '  Mon 2030-01-07 09:00 Europe/Paris (08:00Z)',
      '  Mon 2030-01-14 09:00 Europe/Paris (08:00Z)',
      '  Mon 2030-01-21 09:00 Europe/Paris (08:00Z)',
      '  Mon 2030-01-28 09:00 Europe/Paris (08:00Z)',
      '  Mon 2030-02-04 09:00 Europe/Paris (08:00Z)',
    ]);
    const body = (await d.api('GET', '/api/v1/routines/deps')).body.data;
    expect(body.action).toEqual({ task: { title: 'Update dependencies', assignTo: 'lead', labels: ['deps'] } });
  });

  it('an invalid expression is refused before any request, naming the flag and the position', async () => {
    const r = await svc('routines', 'add', 'bad', '--cron', '0 25 * * *', '--task', 'x');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--cron: hour field "25" at position 3: 25 \(at position 3\) is out of range 0-23/);
    const z = await svc('routines', 'add', 'bad', '--cron', '@daily', '--tz', 'Moon/Base', '--task', 'x');
    expect(z.stderr).toMatch(/--tz: unknown time zone "Moon\/Base"/);
    const a = await svc('routines', 'add', 'bad', '--cron', '@daily', '--task', 'x', '--assign', 'ghost');
    expect(a.code).not.toBe(0);
    expect(a.stderr).toMatch(/unprocessable \(422\)/);
    expect(a.stderr).toMatch(/--assign: agent "ghost" does not exist/);
  });

  it('an event trigger with --on and --where; ls, show, fire, history, edit, rm', async () => {
    const add = await svc('routines', 'add', 'triage', '--on', 'task:transition', '--where', 'to=failed', '--task', 'Triage {{event.data.taskId}}', '--assign', 'lead', '--concurrency', 'allow');
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toBe('created routine triage; it fires on task:transition\n');
    const ls = await svc('routines', 'ls');
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(/^NAME\s+STATE\s+WHEN\s+NEXT\s+LAST\s+ACTION/);
    expect(ls.stdout).toMatch(/\ntriage\s+enabled\s+on task:transition \{"to":"failed"\}\s+-\s+-\s+task "Triage \{\{event.data.taskId\}\}" for lead/);
    expect(ls.stdout).toMatch(/\ndeps\s+enabled\s+0 9 \* \* MON Europe\/Paris\s+in \d+\w+\s+-\s+task "Update dependencies" for lead/);

    const fire = await svc('routines', 'fire', 'deps');
    expect(fire.code, fire.stderr).toBe(0);
    expect(fire.stdout).toMatch(/^fired deps \(firing \w{8}\): created task \w{8}\n$/);
    const again = await svc('routines', 'fire', 'deps');
    expect(again.stdout).toMatch(/^skipped deps \(firing \w{8}\): the previous firing's work is still open: task .* is pending\n$/);

    const history = await svc('routines', 'history', 'deps');
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toMatch(/^ID\s+WHEN\s+WHY\s+STATUS\s+CREATED \/ DETAIL/);
    expect(history.stdout.split('\n').filter((l) => /by hand/.test(l))).toHaveLength(2);

    const show = await svc('routines', 'show', 'deps');
    expect(show.stdout).toMatch(/next firings:\n {2}Mon 2030-01-07 09:00 Europe\/Paris/);
    expect(show.stdout).toMatch(/last firings:\nID/);

    const edit = await svc('routines', 'edit', 'deps', '--cron', '30 8 * * *', '--disable');
    expect(edit.code, edit.stderr).toBe(0);
    expect(edit.stdout).toBe('changed routine deps (disabled: it does not fire until enabled)\n');
    const back = await svc('routines', 'edit', 'deps', '--enable');
    expect(back.stdout).toMatch(/^changed routine deps; next firings:\n {2}Mon 2030-01-07 08:30 UTC \(08:30Z\)/);

    const json = JSON.parse((await svc('routines', 'ls', '--json')).stdout);
    expect(json.map((r: any) => r.name)).toEqual(['deps', 'triage']);

    const refuse = await svc('routines', 'rm', 'triage');
    expect(refuse.code).toBe(2);
    const rm = await svc('routines', 'rm', 'triage', '--yes');
    expect(rm.stdout).toBe('removed routine triage\n');
  });

  it('parses --where values as JSON when they are, as text otherwise', () => {
    expect(parseWhere(['to=failed', 'attempt={"gte":3}', 'status=["a","b"]', 'n=3', 'x=null'])).toEqual({ to: 'failed', attempt: { gte: 3 }, status: ['a', 'b'], n: 3, x: null });
    expect(whenText({ schedule: { cron: '@daily', timezone: 'UTC' }, trigger: null })).toBe('@daily');
  });
});
