import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claudeDriver } from '../../src/resources/runs/drivers/claude.js';
import { commandDriver } from '../../src/resources/runs/drivers/command.js';
import { binaryVersion, detectRuntime, findBinary } from '../../src/resources/runs/drivers/detect.js';

const root = mkdtempSync(join(tmpdir(), 'svc-detect-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A shell script at `dir/name` (made executable unless `exec` is false). */
function script(dir: string, name: string, body: string, exec = true): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, exec ? 0o755 : 0o644);
  return file;
}

const a = join(root, 'a');
const b = join(root, 'b');
const c = join(root, 'c');
const claudeB = script(b, 'claude', 'echo "2.1.197 (Claude Code)"');
script(a, 'claude', 'echo not me', false);
mkdirSync(join(c, 'claude'), { recursive: true });
const PATH = [a, c, b].join(':');

describe.skipIf(process.platform === 'win32')('findBinary', () => {
  it('searches PATH in order, passing over a file without its executable bit and a directory', async () => {
    expect(await findBinary('claude', { PATH, cwd: root })).toEqual({
      path: claudeB,
      looked: [`${join(a, 'claude')} (not executable)`, `${join(c, 'claude')} (not a file)`, claudeB],
    });
  });

  it('says where it looked when the name is nowhere on PATH', async () => {
    const r = await findBinary('codex', { PATH, cwd: root });
    expect(r).toEqual({ path: null, looked: [join(a, 'codex'), join(c, 'codex'), join(b, 'codex')], error: `codex was not found: looked in ${a}, ${c}, ${b} (PATH)` });
    expect(await findBinary('codex', { PATH: '', cwd: root })).toMatchObject({ path: null, error: 'codex was not found: PATH is empty' });
  });

  it('takes a command with a slash as a path, relative to the project', async () => {
    expect(await findBinary(claudeB, { PATH: '', cwd: '/' })).toEqual({ path: claudeB, looked: [claudeB] });
    expect(await findBinary('b/claude', { PATH: '', cwd: root })).toEqual({ path: claudeB, looked: [claudeB] });
    expect(await findBinary('./a/claude', { PATH, cwd: root })).toEqual({
      path: null,
      looked: [`${join(a, 'claude')} (not executable)`],
      error: `./a/claude cannot be run: looked at ${join(a, 'claude')} (not executable)`,
    });
    expect(await findBinary('./nope', { PATH, cwd: root })).toEqual({ path: null, looked: [join(root, 'nope')], error: `./nope cannot be run: looked at ${join(root, 'nope')}` });
  });
});

describe.skipIf(process.platform === 'win32')('detectRuntime and binaryVersion', () => {
  it("finds a runtime's default binary on the given PATH and reads its version", async () => {
    expect(await detectRuntime(claudeDriver, null, { cwd: root, env: { PATH } })).toEqual({
      kind: 'claude',
      path: claudeB,
      version: '2.1.197 (Claude Code)',
      looked: [`${join(a, 'claude')} (not executable)`, `${join(c, 'claude')} (not a file)`, claudeB],
      error: null,
    });
  });

  it('answers a missing binary with where it looked, and a command runtime without a command with why', async () => {
    expect(await detectRuntime(claudeDriver, 'claude-nightly', { cwd: root, env: { PATH: b } })).toMatchObject({
      path: null,
      version: null,
      error: `claude-nightly was not found: looked in ${b} (PATH)`,
    });
    expect(await detectRuntime(commandDriver, null, { cwd: root })).toMatchObject({ path: null, error: 'a runtime of kind command names its program in runtime.command' });
    // A command runtime has no version to ask for.
    expect(await detectRuntime(commandDriver, claudeB, { cwd: root })).toMatchObject({ path: claudeB, version: null, error: null });
  });

  it('reads the first line printed (stderr when stdout is empty); a failure or silence is an error', async () => {
    expect(await binaryVersion(script(root, 'v-stderr', 'echo "tool 1.2" >&2'), ['--version'])).toEqual({ version: 'tool 1.2', error: null });
    expect(await binaryVersion(script(root, 'v-fail', 'echo "unknown option" >&2; exit 2'), ['--version'])).toEqual({ version: null, error: 'unknown option' });
    expect(await binaryVersion(script(root, 'v-quiet', 'true'), ['--version'])).toEqual({ version: null, error: 'nothing printed by --version' });
  });

  it('kills a CLI that does not answer its version in time, without holding the event loop', async () => {
    const hang = script(root, 'v-hang', 'exec sleep 30');
    let ticks = 0;
    const tick = setInterval(() => ticks++, 10);
    const t = Date.now();
    const r = await binaryVersion(hang, ['--version'], { timeoutMs: 300 });
    clearInterval(tick);
    expect(r).toEqual({ version: null, error: 'no answer to --version within 300 ms' });
    expect(Date.now() - t).toBeLessThan(5000);
    expect(ticks).toBeGreaterThan(5);
  });
});
