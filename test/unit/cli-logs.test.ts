import { getEventListeners } from 'node:events';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { follow, tailLines } from '../../src/cli/system/logs-command.js';
import { tempDir } from '../temp.js';

describe('svc logs', () => {
  it('tailLines reads the last N lines from the end of a large file', () => {
    const file = join(tempDir('svc-logs-'), 'daemon.log');
    writeFileSync(file, Array.from({ length: 20_000 }, (_, i) => `{"n":${i}}`).join('\n') + '\n');
    const { lines } = tailLines(file, 3);
    expect(lines).toEqual(['{"n":19997}', '{"n":19998}', '{"n":19999}']);
    expect(tailLines(join(file, 'missing'), 3)).toEqual({ lines: [], size: 0 });
    // -n 0: none of them (slice(-0) would be all 20,000), and the size to follow from.
    expect(tailLines(file, 0)).toMatchObject({ lines: [] });
    expect(tailLines(file, 0).size).toBeGreaterThan(0);
  });

  it('follow keeps one abort listener however many times it polls', async () => {
    const file = join(tempDir('svc-logs-'), 'daemon.log');
    writeFileSync(file, '');
    const seen: string[] = [];
    const abort = new AbortController();
    const done = follow(file, 0, (l) => seen.push(l), abort.signal);
    // Each line is seen at a later poll than the one before.
    for (let i = 0; i < 5; i++) {
      appendFileSync(file, `line ${i}\n`);
      await expect.poll(() => seen.length).toBe(i + 1);
    }
    expect(getEventListeners(abort.signal, 'abort').length).toBeLessThanOrEqual(1);
    abort.abort();
    await done;
  });

  it('follow prints appended lines whole, and starts over when the file is rotated', async () => {
    const file = join(tempDir('svc-logs-'), 'daemon.log');
    writeFileSync(file, 'old\n');
    const seen: string[] = [];
    const abort = new AbortController();
    const done = follow(file, 4, (l) => seen.push(l), abort.signal);
    appendFileSync(file, 'one\ntw');
    await expect.poll(() => seen).toEqual(['one']);
    appendFileSync(file, 'o\n');
    await expect.poll(() => seen).toEqual(['one', 'two']);
    // Rotation: a new, shorter file under the same name.
    writeFileSync(file, 'fresh\n');
    await expect.poll(() => seen).toEqual(['one', 'two', 'fresh']);
    abort.abort();
    await done;
  });
});
