import { afterAll } from 'vitest';
import { removeProjects } from './harness.js';

// Temp projects live as long as the test file that made them.
afterAll(() => removeProjects());
