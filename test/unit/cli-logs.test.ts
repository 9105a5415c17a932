import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { follow, tailLines } from '../../src/resources/system/logs-command.js';

describe('svc logs', () => {
  it('tailLines reads the last N lines from the end of a large file', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-logs-')), 'daemon.log');
    writeFileSync(file, Array.from({ length: 20_000 }, (_, i) => `{"n":${i}}`).join('\n') + '\n');
    const { lines } = tailLines(file, 3);
    expect(lines).toEqual(['{"n":19997}', '{"n":19998}', '{"n":19999}']);
    expect(tailLines(join(file, 'missing'), 3)).toEqual({ lines: [], size: 0 });
  });

  it('follow prints appended lines whole, and starts over when the file is rotated', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-logs-')), 'daemon.log');
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
