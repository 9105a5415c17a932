import { afterAll, expect, inject } from 'vitest';
import { flushEmitted } from './event-coverage.js';
import { removeProjects } from './harness.js';
import { dropStateDatabases } from './state-pg.js';

afterAll(async () => {
  await dropStateDatabases();
  // Temp projects live as long as the test file that made them.
  removeProjects();
  // The events this file's daemons emitted, for the coverage check of the global teardown.
  flushEmitted(inject('emittedEventsDir'), expect.getState().testPath ?? 'unknown');
});
