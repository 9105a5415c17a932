import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from './temp.js';
import { startTimeOf } from '../src/lib/proc.js';
import { readLocalKey } from '../src/state-dir.js';
import { agentCli } from './agent-clis.js';
import { exited, serve } from './cli-helpers.js';
import { git, gitProject, until } from './harness.js';
import { alive } from './procs.js';
import * as A from './scripted-anthropic.js';

// A daemon killed outright (SIGKILL) while its runs work: the agents' CLIs live on in their own
// process groups. The next daemon kills them (by pid and start time), marks their runs lost and
// runs them again, resuming the CLI's session; nothing is left behind.

const FAKE_AGENT = fileURLToPath(new URL('./fixtures/runs/fake-agent.mjs', import.meta.url));
const claude = agentCli('claude');

async function api(url: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(url + path, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

const runs = async (url: string, key: string, taskId: string) => (await api(url, key, 'GET', `/api/v1/runs?taskId=${taskId}`)).body.data as any[];

async function crashAndRecover(
  root: string,
  agentBody: Record<string, unknown>,
  description: string,
  onRunning: (url: string, key: string, taskId: string) => Promise<number>,
): Promise<{ url: string; key: string; taskId: string; pid: number; stop(): Promise<void> }> {
  const first = await serve(root);
  const key = readLocalKey(root)!;
  expect((await api(first.url, key, 'POST', '/api/v1/agents', agentBody)).status).toBe(201);
  const t = await api(first.url, key, 'POST', '/api/v1/tasks', { title: 'Survive a crash', description, assignTo: agentBody.name, maxRetries: 0 });
  expect(t.status).toBe(201);
  const taskId = t.body.data.id;
  const pid = await onRunning(first.url, key, taskId);
  const start = startTimeOf(pid);
  expect(start).not.toBeNull();
  first.child.kill('SIGKILL');
  await exited(first.child);
  // The CLI outlived its daemon: it is in a process group of its own.
  expect(alive(pid)).toBe(true);
  const second = await serve(root);
  await until('the orphaned CLI to be killed', async () => !alive(pid), 20_000);
  return {
    url: second.url,
    key,
    taskId,
    pid,
    stop: async () => {
      second.child.kill('SIGTERM');
      await exited(second.child);
    },
  };
}

describe('a daemon killed while a run works', () => {
  it('kills the orphaned CLI on restart, marks the run lost and runs it again (command runtime)', async () => {
    const root = gitProject();
    // Silent (@hang): a CLI that writes after its daemon died would end on the broken pipe by itself.
    const r = await crashAndRecover(root, { name: 'alice', runtime: { kind: 'command', command: FAKE_AGENT } }, '@hang', async (url, key, taskId) => {
      // Once it has written its first line: killed before that, it would write it to a broken pipe and end by itself.
      await until('the CLI to say it started', async () => {
        const run = (await runs(url, key, taskId))[0];
        return run?.status === 'running' && JSON.stringify((await api(url, key, 'GET', `/api/v1/runs/${run.id}/log`)).body.data).includes('fake agent in');
      });
      return (await runs(url, key, taskId))[0].pid;
    });
    try {
      let list: any[] = [];
      await until('the run lost and queued again', async () => (list = await runs(r.url, r.key, r.taskId)).length === 2 && list[0].status === 'running', 15_000);
      const [again, lost] = list;
      expect(lost).toMatchObject({ status: 'lost', attempt: 1 });
      expect(lost.error).toMatch(/stopped without ending it/);
      expect(again).toMatchObject({ reason: 'requeue', attempt: 2 });
      expect(again.status).toBe('running');
      // The same worktree serves the run started again.
      expect(again.workspace).toBe(lost.workspace);
      // The project's own and the task's (and a spare made ahead for the next run, workspace.ts).
      expect(
        git(root, 'worktree', 'list')
          .split('\n')
          .filter((l) => !l.includes('/.spare-')),
      ).toHaveLength(2);
    } finally {
      await r.stop();
    }
  }, 60_000);

  it.skipIf(!claude)(
    'kills the orphaned Claude Code on restart and resumes its session in the run started again',
    async () => {
      const up = await A.startScriptedAnthropic();
      try {
        const root = gitProject();
        const config = tempDir('svc-claude-config-');
        up.script({ hang: true }, { blocks: [A.text('Finished after the crash.')] });
        // Claude Code keeps a folder of its own in TMPDIR (claude-<uid>): one of the test's.
        const env = { ANTHROPIC_BASE_URL: up.baseUrl, ANTHROPIC_API_KEY: 'sk-scripted', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', CLAUDE_CONFIG_DIR: config, TMPDIR: tempDir('svc-claude-tmp-') };
        const r = await crashAndRecover(root, { name: 'cody', model: 'anthropic/claude-opus-4-8', runtime: { kind: 'claude', command: claude!.path, env } }, 'crash test', async (url, key, taskId) => {
          await until('Claude Code to ask the model', async () => up.requests.length >= 1, 20_000);
          await until('its session to be known', async () => (await runs(url, key, taskId))[0]?.sessionId !== null);
          return (await runs(url, key, taskId))[0].pid;
        });
        try {
          let list: any[] = [];
          await until('the run started again to finish', async () => (list = await runs(r.url, r.key, r.taskId)).length === 2 && list[0].status === 'succeeded', 30_000);
          const [again, lost] = list;
          expect(lost.status).toBe('lost');
          expect(again.sessionId).toBe(lost.sessionId);
          expect(again.summary).toBe('Finished after the crash.');
          expect((await api(r.url, r.key, 'GET', `/api/v1/tasks/${r.taskId}`)).body.data.status).toBe('review');
        } finally {
          await r.stop();
        }
      } finally {
        await up.close();
      }
    },
    90_000,
  );
});
