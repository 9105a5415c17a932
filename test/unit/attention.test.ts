import { describe, expect, it } from 'vitest';
import { attentionOf, needsNobody, type TaskLookup } from '../../src/resources/notify/attention.js';
import type { App } from '../../src/app.js';
import type { StoredEvent } from '../../src/events/outbox.js';
import { noteOf } from '../../src/resources/notify/command.js';
import { commandLine, defaultNotifier, notifierCommand } from '../../src/cli/desktop.js';

// What needs a person (attention:needed) from the events that say so, and the notifier command a
// notification becomes. The daemon's side (same transaction, the runner's failures) is in
// test/notify.test.ts.

const TASK = '019a0000-0000-7000-8000-00000000beef';
const tasks =
  (t: Partial<ReturnType<TaskLookup> & object> | null): TaskLookup =>
  () =>
    t && { title: 'Ship it', retries: 0, maxRetries: 0, assignTo: 'alice', result: null, ...t };

describe('attentionOf', () => {
  it('an approval request: reason approval, the command that shows it, the approvals page', () => {
    const data = { approvalId: '019a0000-0000-7000-8000-0000000000a1', taskId: TASK, missionId: null, title: 'Deploy to prod?', requestedBy: 'alice' };
    expect(attentionOf({ id: 7, name: 'approval:requested', data }, tasks(null))).toEqual({
      reason: 'approval',
      title: 'Approval needed: Deploy to prod?',
      message: 'asked by alice · svc approvals show 000000a1',
      taskId: TASK,
      runId: null,
      agent: null,
      approvalId: data.approvalId,
      link: '/#/approvals',
      source: { event: 'approval:requested', id: 7 },
      detail: data,
    });
  });

  it('a permission approval (kind permission) carries its run and agent', () => {
    const a = attentionOf(
      {
        id: 8,
        name: 'approval:requested',
        data: { approvalId: 'ap', kind: 'permission', taskId: TASK, missionId: null, title: 'Bash: rm -rf build', requestedBy: 'alice', runId: 'run-1', tool: 'Bash' },
      },
      tasks(null),
    );
    expect(a).toMatchObject({ reason: 'permission', title: 'Permission needed: Bash: rm -rf build', runId: 'run-1', agent: 'alice', approvalId: 'ap' });
  });

  it('a task that failed with no retries left: its error, run, agent and page', () => {
    const a = attentionOf(
      { id: 9, name: 'task:transition', data: { taskId: TASK, from: 'in_progress', to: 'failed', reason: 'run r failed' } },
      tasks({ retries: 2, maxRetries: 2, result: { runId: 'run-9', error: 'exited with code 3: boom' } }),
    );
    expect(a).toMatchObject({
      reason: 'failed',
      title: 'Task failed: Ship it',
      message: 'exited with code 3: boom · no retries left (2 of 2) · svc tasks show 0000beef',
      taskId: TASK,
      runId: 'run-9',
      agent: 'alice',
      link: '/#/runs/run-9',
    });
    // Failed by hand, with no run: the transition's reason, and the task's page.
    const byHand = attentionOf({ id: 10, name: 'task:transition', data: { taskId: TASK, from: 'in_progress', to: 'failed', reason: 'gave up' } }, tasks({}));
    expect(byHand).toMatchObject({ message: expect.stringMatching(/^gave up · /), runId: null, link: `/#/tasks/${TASK}` });
  });

  it('nothing for a failure with retries left, another move, a task gone, or any other event', () => {
    const failed = { taskId: TASK, from: 'in_progress', to: 'failed' };
    expect(attentionOf({ id: 1, name: 'task:transition', data: failed }, tasks({ retries: 1, maxRetries: 3 }))).toBeNull();
    expect(attentionOf({ id: 1, name: 'task:transition', data: { ...failed, to: 'review' } }, tasks({}))).toBeNull();
    expect(attentionOf({ id: 1, name: 'task:transition', data: failed }, tasks(null))).toBeNull();
    expect(attentionOf({ id: 1, name: 'run:finished', data: { runId: 'r', status: 'failed' } }, tasks({}))).toBeNull();
    expect(attentionOf({ id: 1, name: 'attention:needed', data: { reason: 'failed' } }, tasks({}))).toBeNull();
  });

  it('budget:exceeded and runner:paused: matched by name, their data copied through', () => {
    const budget = { runId: 'run-2', taskId: TASK, agent: 'bob', limitUsd: 5, spentUsd: 5.2 };
    expect(attentionOf({ id: 11, name: 'budget:exceeded', data: budget }, tasks(null))).toEqual({
      reason: 'budget',
      title: 'Budget reached: bob',
      message: `runId=run-2, taskId=${TASK}, agent=bob, limitUsd=5, spentUsd=5.2`,
      taskId: TASK,
      runId: 'run-2',
      agent: 'bob',
      approvalId: null,
      link: '/#/runs/run-2',
      source: { event: 'budget:exceeded', id: 11 },
      detail: budget,
    });
    const paused = { provider: 'anthropic', until: '2026-05-01T14:05:00.000Z', runs: ['r1', 'r2'] };
    expect(attentionOf({ id: 12, name: 'runner:paused', data: paused }, tasks(null))).toMatchObject({
      reason: 'paused',
      title: 'Runs paused: anthropic',
      message: 'until 2026-05-01T14:05:00.000Z · 2 runs waiting',
      taskId: null,
      link: null,
      detail: paused,
    });
    expect(attentionOf({ id: 13, name: 'runner:paused', data: { provider: 'openai', until: null, runs: 1 } }, tasks(null))!.message).toBe('1 run waiting');
  });
});

describe('the notifier command', () => {
  const note = { title: 'Approval needed: $(touch /tmp/x) `id` "q" \'s', body: 'asked by alice\nhttp://127.0.0.1:7000/#/approvals', urgent: true };

  it('notify-send: options first, then --, then the texts as they are', () => {
    expect(notifierCommand('notify-send', note)).toEqual({ cmd: 'notify-send', args: ['--app-name=svc', '--urgency=critical', '--', note.title, note.body] });
    expect(notifierCommand('notify-send', { ...note, urgent: false }).args[1]).toBe('--urgency=normal');
  });

  it('osascript: a fixed script that reads the texts from its arguments', () => {
    const c = notifierCommand('osascript', note);
    expect(c.args.slice(0, 6)).toEqual(['-e', 'on run argv', '-e', 'display notification (item 2 of argv) with title (item 1 of argv)', '-e', 'end run']);
    expect(c.args.slice(6)).toEqual([note.title, note.body]);
    expect(c.args.slice(0, 6).join(' ')).not.toContain('touch');
  });

  it('a text is never an option, holds no control character and is bounded', () => {
    const c = notifierCommand('osascript', { title: '-e do shell script "rm -rf ~"\u0000\u001b[31m', body: `--help\r\n${'x'.repeat(500)}`, urgent: false });
    const [title, body] = c.args.slice(6);
    expect(title).toBe('\u2010e do shell script "rm -rf ~"  [31m');
    expect(body!.startsWith('\u2010-help \n')).toBe(true);
    expect([...body!]).toHaveLength(300);
    expect(body!.endsWith('…')).toBe(true);
  });

  it('--print shows it as a shell line, quoted', () => {
    expect(commandLine(notifierCommand('notify-send', { title: "it's", body: 'a b', urgent: false }))).toBe(`notify-send --app-name=svc --urgency=normal -- 'it'\\''s' 'a b'`);
  });

  it('the platform decides the default', () => {
    expect(defaultNotifier('linux')).toBe('notify-send');
    expect(defaultNotifier('darwin')).toBe('osascript');
    expect(defaultNotifier('win32')).toBeNull();
  });
});

describe('noteOf', () => {
  const delivery = (body: unknown) => ({ event: 'x', id: 'd', body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)) });

  it('an attention:needed: its title, its message and the full link; urgent when a run waits for an answer', () => {
    const n = noteOf(
      delivery({ event: 'attention:needed', data: { reason: 'permission', title: 'Permission needed: Bash', message: 'asked by alice', link: '/#/approvals' } }),
      'http://127.0.0.1:7000',
    );
    expect(n).toEqual({ title: 'Permission needed: Bash', body: 'asked by alice\nhttp://127.0.0.1:7000/#/approvals', urgent: true });
    expect(noteOf(delivery({ event: 'attention:needed', data: { reason: 'failed', title: 'Task failed: x', message: 'boom', link: null } }), 'http://h')).toEqual({
      title: 'Task failed: x',
      body: 'boom',
      urgent: false,
    });
  });

  it('a test event shows; anything else, or no JSON, shows nothing', () => {
    expect(noteOf(delivery({ event: 'webhook:test', data: {} }), 'http://h')).toMatchObject({ title: 'svc notify works' });
    expect(noteOf(delivery({ event: 'task:created', data: {} }), 'http://h')).toBeNull();
    expect(noteOf(delivery('not json'), 'http://h')).toBeNull();
  });
});

describe('needsNobody (the event log may send the event with its COMMIT)', () => {
  const app = {} as App;
  const ev = (name: string, data: Record<string, unknown>) => ({ id: 0, name, data, timestamp: '' }) as StoredEvent;
  it('is false for every event that can need a person, whatever its task turns out to be', () => {
    expect(needsNobody(app, ev('approval:requested', { approvalId: 'a', title: 't' }))).toBe(false);
    expect(needsNobody(app, ev('task:transition', { taskId: TASK, from: 'in_progress', to: 'failed' }))).toBe(false);
    expect(needsNobody(app, ev('budget:exceeded', { agent: 'alice' }))).toBe(false);
    expect(needsNobody(app, ev('runner:paused', { provider: 'anthropic' }))).toBe(false);
  });
  it('is true for the others', () => {
    expect(needsNobody(app, ev('task:created', { taskId: TASK, title: 't', status: 'pending', assignTo: null, missionId: null }))).toBe(true);
    expect(needsNobody(app, ev('task:transition', { taskId: TASK, from: 'in_progress', to: 'review' }))).toBe(true);
    expect(needsNobody(app, ev('attention:needed', { reason: 'failed' }))).toBe(true);
  });
});
