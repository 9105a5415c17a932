import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inTestHome, leftovers } from '../home-guard.js';
import { tempDir } from '../temp.js';

// The suite leaves nothing in the system's temp dir: each run has its own (TMPDIR, made and removed
// by the global setup, which fails the run on what a test left there), and tempDir() removes what
// a test file made when the file ends.

describe("the run's temp dir", () => {
  it("is every test's temp dir: a run's own, not the system's", () => {
    expect(basename(tmpdir())).toMatch(/^svc-test-tmp-\d+$/);
    expect(existsSync(tmpdir())).toBe(true);
    const dir = tempDir('svc-guard-check-');
    expect(dirname(dir)).toBe(tmpdir());
  });

  it('lists what was left in it, for the teardown to name', () => {
    const dir = tempDir('svc-left-');
    expect(leftovers(dir)).toEqual([]);
    writeFileSync(join(dir, 'b.txt'), '');
    mkdirSync(join(dir, 'a-dir'));
    expect(leftovers(dir)).toEqual(['a-dir', 'b.txt']);
    expect(leftovers(join(dir, 'gone'))).toEqual([]);
  });

  it("never takes a test home for the real config dir, this run's or an outer run's", () => {
    expect(inTestHome('/tmp/svc-test-home-4242/.config/svc')).toBe(true);
    expect(inTestHome('/tmp/svc-test-tmp-1/svc-test-home-2/.config/svc')).toBe(true);
    expect(inTestHome('/home/ana/.config/svc')).toBe(false);
    expect(inTestHome('/tmp/svc-test-home-x/.config/svc')).toBe(false);
  });
});
