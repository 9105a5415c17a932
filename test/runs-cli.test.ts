import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatLogItem } from '../src/resources/runs/log-lines.js';
import { agentCli } from './agent-clis.js';
import { svcAgainst } from './cli-helpers.js';
import { gitProject, startTestDaemon, until, type TestDaemon } from './harness.js';
import { tempDir } from './temp.js';

// The runs as people use them from the CLI: agents given a runtime, a task run and followed, the
// runs listed, shown, read, diffed and cancelled, usage summed.

const FAKE_AGENT = fileURLToPath(new URL('./fixtures/runs/fake-agent.mjs', import.meta.url));
const claude = agentCli('claude');
const codex = agentCli('codex');

let d: TestDaemon;
const cli = async (...args: string[]) => await svcAgainst(d, args);

beforeAll(async () => {
  const root = gitProject();
  // The daemon finds the pinned agent CLIs on its PATH, as a user's daemon finds theirs.
  const extra = [claude, codex].filter(Boolean).map((c) => dirname(c!.path));
  // (`claude --version` makes a folder of its own in TMPDIR: one of the test's.)
  d = await startTestDaemon({ root, env: { PATH: [...extra, process.env.PATH].join(':'), TMPDIR: tempDir('svc-daemon-tmp-') } });
});
afterAll(async () => {
  await d.close();
});

describe('svc agents with a runtime', () => {
  it('adds, edits and shows an agent runtime, and refuses what cannot run', async () => {
    const added = await cli('agents', 'add', 'alice', '--runtime', 'command', '--command', FAKE_AGENT, '--env', 'GREETING=hi', '--no-auto-run');
    expect(added.code, added.stderr).toBe(0);
    const shown = JSON.parse((await cli('--json', 'agents', 'show', 'alice')).stdout);
    expect(shown.runtime).toEqual({ kind: 'command', command: FAKE_AGENT, env: { GREETING: 'hi' }, autoRun: false });
    const edited = await cli('agents', 'edit', 'alice', '--permission-mode', 'bypass');
    expect(edited.code, edited.stderr).toBe(0);
    expect(JSON.parse((await cli('--json', 'agents', 'show', 'alice')).stdout).runtime).toMatchObject({ kind: 'command', autoRun: false, permissionMode: 'bypass', env: { GREETING: 'hi' } });
    const ls = await cli('agents', 'ls');
    expect(ls.stdout).toMatch(/alice .*command \(by hand\)/);
    const missing = await cli('agents', 'add', 'bob', '--runtime', 'claude', '--command', '/nowhere/claude');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/\/nowhere\/claude cannot be run/);
    const vault = await cli('agents', 'edit', 'alice', '--env', 'TOKEN=vault:github/token');
    expect(vault.code).toBe(1);
    expect(vault.stderr).toMatch(/agent "alice" has no vault entry for service "github"/);
    const noKind = await cli('agents', 'add', 'carol', '--command', FAKE_AGENT);
    expect(noKind.code).toBe(2);
    expect(noKind.stderr).toMatch(/--runtime/);
  });

  it.skipIf(!claude || !codex)('detects the agent CLIs on the daemon PATH, with versions', async () => {
    const r = await cli('agents', 'detect');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`claude\\s+${claude!.version.replace(/\./g, '\\.')} \\(Claude Code\\)`));
    expect(r.stdout).toMatch(/codex\s+codex-cli 0\.171\.0/);
  });
});

describe('svc tasks run, svc runs', () => {
  let taskId: string;
  let runId: string;

  it('runs a task and follows its log to the end', async () => {
    const t = await cli('--json', 'tasks', 'add', 'Write a', '--assign-to', 'alice', '--description', '@write a.txt alpha\n@stderr warming up');
    taskId = JSON.parse(t.stdout).id;
    const run = await cli('tasks', 'run', taskId.slice(-8), '-f');
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toContain('✚ a.txt +1 −0');
    expect(lines).toContain('! warming up');
    expect(lines.at(-1)).toMatch(/^run [0-9a-f]{8} succeeded$/);
    runId = JSON.parse((await cli('--json', 'runs', 'ls', '--task', taskId.slice(-8))).stdout)[0].id;
  });

  it('lists, shows, reads and diffs runs', async () => {
    const ls = await cli('runs', 'ls');
    expect(ls.stdout).toMatch(new RegExp(`${runId.slice(-8)}\\s+succeeded\\s+${taskId.slice(-8)}\\s+alice\\s+1`));
    const show = await cli('runs', 'show', runId.slice(-8));
    expect(show.stdout).toMatch(/branch\s+svc\/alice\//);
    expect(show.stdout).toMatch(/diffStat\s+1 files \+1 −0/);
    const logs = await cli('runs', 'logs', runId.slice(-6));
    expect(logs.stdout.split('\n')).toContain('✚ a.txt +1 −0');
    const json = (await cli('--json', 'runs', 'logs', runId)).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(json.map((i) => i.seq)).toEqual([...json.keys()].map((i) => i + 1));
    const diff = await cli('runs', 'diff', runId.slice(-8));
    expect(diff.stdout).toContain('+alpha');
    const usage = await cli('usage', '--by', 'agent');
    expect(usage.stdout).toMatch(/alice\s+1\s+10\s+2\s+5\s+\$0\.0010/);
    const runners = await cli('runs', 'runners');
    expect(runners.stdout).toMatch(/yes\s+0\/\d+/);
  });

  it('cancels a live run, and refuses to cancel one that ended', async () => {
    const again = await cli('runs', 'cancel', runId, '--yes');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already ended \(succeeded\)/);
    const t = JSON.parse((await cli('--json', 'tasks', 'add', 'Tick', '--assign-to', 'alice', '--description', '@tick 100')).stdout);
    const started = JSON.parse((await cli('--json', 'tasks', 'run', t.id)).stdout);
    await until('the run to work', async () => JSON.parse((await cli('--json', 'runs', 'show', started.id)).stdout).status === 'running');
    const cancel = await cli('runs', 'cancel', started.id.slice(-8), '--yes');
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toBe(`run ${started.id.slice(-8)} cancelled\n`);
    const noTty = await cli('runs', 'cancel', started.id);
    expect(noTty.code).not.toBe(0);
  });
});

describe('svc usage, svc budgets, svc runs queue and resume', () => {
  it('prints spend per agent today, this week and this month, with the budgets set from a file', async () => {
    const file = join(d.root, 'budgets.json');
    writeFileSync(
      file,
      JSON.stringify({
        limits: [
          { agent: 'alice', period: 'day', tokens: 1000 },
          { period: 'month', costUsd: 10 },
        ],
      }),
    );
    const set = await cli('budgets', 'set', file);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/alice\s+day\s+.*1\.0k tokens\s+\d+(\.\d)?\s+ok/);
    expect(set.stdout).toContain('(set through the API');
    const usage = await cli('usage');
    expect(usage.code, usage.stderr).toBe(0);
    // alice's run that ended reported 18 tokens ($0.001) today (the cancelled one none): 1.8 % of her day's 1,000.
    expect(usage.stdout).toMatch(/^AGENT\s+TODAY\s+THIS WEEK\s+THIS MONTH/);
    expect(usage.stdout).toMatch(/alice\s+18 \$0\.0010 · 1\.8% of 1\.0k\s+18 \$0\.0010\s+18 \$0\.0010\n/);
    expect(usage.stdout).toMatch(/\(project\)\s+18 \$0\.0010\s+18 \$0\.0010\s+18 \$0\.0010 · 0% of \$10\.00/);
    expect(usage.stdout).toContain('(periods in UTC; budgets: svc budgets)');
    const json = JSON.parse((await cli('--json', 'usage')).stdout);
    expect(json.rows.find((r: any) => r.agent === 'alice').day).toMatchObject({ tokens: 18, runs: 2, limit: { tokens: 1000, costUsd: null }, percent: 1.8 });
    writeFileSync(file, JSON.stringify({ limits: [{ period: 'hourly', tokens: 5 }] }));
    const bad = await cli('budgets', 'set', file);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/limits\.0\.period/);
  });

  it('shows the queue per agent, and refuses to resume a run that is not paused', async () => {
    const q = await cli('runs', 'queue');
    expect(q.code, q.stderr).toBe(0);
    expect(q.stdout).toMatch(/this runner: 0\/\d+ running/);
    expect(q.stdout).toMatch(/alice\s+-\s+idle/);
    const runId = JSON.parse((await cli('--json', 'runs', 'ls', '--agent', 'alice')).stdout)[0].id;
    const r = await cli('runs', 'resume', runId.slice(-8));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not paused; only a paused run can be resumed/);
  });
});

describe('formatLogItem', () => {
  it('writes each kind of item as one readable line', () => {
    const at = '2030-01-01T00:00:00.000Z';
    expect(formatLogItem({ seq: 1, at, kind: 'command', command: 'npm test', exitCode: 0, durationMs: 4100 })).toBe('▸ Bash  npm test  (exit 0, 4.1 s)');
    expect(formatLogItem({ seq: 2, at, kind: 'file_change', path: 'src/parser.ts', change: 'update', added: 12, removed: 3 })).toBe('✎ src/parser.ts +12 −3');
    expect(formatLogItem({ seq: 3, at, kind: 'tool_call', tool: 'Read', input: { file_path: 'README.md' } })).toBe('▸ Read  README.md');
    expect(formatLogItem({ seq: 4, at, kind: 'tool_result', output: 'line one\nline two', isError: true })).toBe('  ✗ line one line two');
    expect(formatLogItem({ seq: 5, at, kind: 'usage', usage: { inputTokens: 10, outputTokens: 4, costUsd: 0.0123 } })).toBe('· tokens 10 in, 4 out, $0.0123');
    expect(formatLogItem({ seq: 6, at, kind: 'rate_limit', status: 'rejected', resetsAt: at, limitType: 'five_hour' })).toBe(`⚠ rate limit rejected until ${at} (five_hour)`);
    expect(formatLogItem({ seq: 7, at, kind: 'truncated', dropped: 12 })).toBe('· 12 more items were left out (runner.maxLogItems)');
    expect(formatLogItem({ seq: 8, at, kind: 'command', command: 'x'.repeat(500), exitCode: null, durationMs: null }, 60).length).toBeLessThan(80);
  });
});
