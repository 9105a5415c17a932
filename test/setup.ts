import { afterAll, expect, inject } from 'vitest';
import { flushEmitted } from './event-coverage.js';
import { dropStateDatabases } from './state-pg.js';
import { removeTempDirs } from './temp.js';

afterAll(async () => {
  await dropStateDatabases();
  // Temp projects and dirs live as long as the test file that made them.
  removeTempDirs();
  // The events this file's daemons emitted, for the coverage check of the global teardown.
  flushEmitted(inject('emittedEventsDir'), expect.getState().testPath ?? 'unknown');
});
