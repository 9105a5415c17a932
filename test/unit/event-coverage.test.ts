import { readdirSync, rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { EVENT_NAMES } from '../../src/events/registry.js';
import { flushEmitted, neverEmitted, readEmitted, recordEmitted } from '../event-coverage.js';
import { tempDir } from '../temp.js';

describe('event coverage check', () => {
  const dir = tempDir('svc-coverage-unit-');
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('gathers the names every test file wrote and reports the catalog events none emitted', () => {
    // Names outside the catalog, so this test does not count towards the real check.
    recordEmitted('unit:one');
    recordEmitted('unit:two');
    flushEmitted(dir, '/repo/test/a.test.ts');
    recordEmitted('unit:two');
    recordEmitted('unit:three');
    flushEmitted(dir, '/repo/test/b.test.ts');
    flushEmitted(dir, '/repo/test/c.test.ts'); // nothing new: no file
    expect(readdirSync(dir)).toHaveLength(2);
    const seen = readEmitted(dir);
    expect([...seen].sort()).toEqual(['unit:one', 'unit:three', 'unit:two']);
    expect(neverEmitted(['unit:one', 'unit:four', 'unit:two'], seen)).toEqual(['unit:four']);
  });

  it('lists every catalog event name once', () => {
    expect(new Set(EVENT_NAMES).size).toBe(EVENT_NAMES.length);
  });
});
