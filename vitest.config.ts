import { defineConfig } from 'vitest/config';
import { homeEnv, testHome } from './test/home-guard.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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
    env: { NO_COLOR: '1', SVC_KEYCHAIN: 'off', ...homeEnv(testHome()) },
  },
});
