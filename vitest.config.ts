import { configDefaults, defineConfig } from 'vitest/config';
import { homeEnv, testHome, testTmp } from './test/home-guard.js';

/**
 * The resource suites run a second time with the daemon's state on PostgreSQL (test/state-pg.ts
 * gives each test daemon a database of its own on the run's throwaway server).
 */
export const STATE_PG_SUITES = [
  'test/tasks.test.ts',
  'test/leases.test.ts',
  'test/lease-edges.test.ts',
  'test/missions.test.ts',
  'test/playbooks.test.ts',
  'test/routines.test.ts',
  'test/approvals.test.ts',
  'test/agents.test.ts',
  'test/skills.test.ts',
  'test/vault.test.ts',
  'test/webhooks.test.ts',
  'test/webhooks-worker.test.ts',
  'test/webhooks-retention.test.ts',
  'test/events.test.ts',
  'test/outbox.test.ts',
  'test/chat.test.ts',
  'test/chat-responses.test.ts',
  'test/mcp.test.ts',
  'test/auth-status.test.ts',
  'test/board-sessions.test.ts',
  'test/nul-input.test.ts',
  'test/fuzz.test.ts',
];

/**
 * The files that start the real, pinned agent CLIs (test/agent-clis.ts) run after everything else,
 * two at a time. Claude Code is a 245 MB program that takes about 1 s of CPU a run, but spread over
 * many short steps (its own start-up, git, rg, ps, a shell snapshot, the MCP handshake, each model
 * turn), and each step waits for a core. Alone a run takes about 1 s; sharing two cores with three
 * other forks (browsers, PostgreSQL, the install proof) it took 15 s here and over 30 s on CI, so
 * the tests' 30 s bound on a run measured the machine's load rather than svc.
 */
export const AGENT_CLI_SUITES = [
  'test/runs-clis.test.ts',
  'test/run-drivers.test.ts',
  'test/runs-crash.test.ts',
  'test/runs-cli.test.ts',
  'test/codex-cli.test.ts',
  'test/cli-completion-doctor.test.ts',
];

const env = { NO_COLOR: '1', SVC_KEYCHAIN: 'off', ...homeEnv(testHome()), TMPDIR: testTmp() };

export default defineConfig({
  test: {
    setupFiles: ['test/setup.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most test time is spent waiting on sockets, child processes and timers, not on the CPU: four
    // forks on two cores finish the suite in about 70% of the time two take (measured: 72 s vs 102 s).
    maxWorkers: 4,
    // Daemons started by tests, in-process or as child processes, never touch the user's keychain,
    // home or ~/.config: HOME, the XDG dirs and SVC_CONFIG_DIR are a temp dir of this run (made and
    // removed by the global setup, which also fails the run if the real svc config dir changed).
    // TMPDIR is the run's own temp dir (made and removed by the global setup, which fails the run
    // on anything a test left in it).
    env,
    projects: [
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...AGENT_CLI_SUITES] } },
      { extends: true, test: { name: 'agent-clis', include: AGENT_CLI_SUITES, maxWorkers: 2, sequence: { groupOrder: 1 } } },
      { extends: true, test: { name: 'state-pg', include: STATE_PG_SUITES, env: { ...env, SVC_TEST_STATE: 'postgres' } } },
    ],
  },
});
