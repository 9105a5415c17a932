import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exited, serve } from './cli-helpers.js';
import { makeProject } from './harness.js';
import { readLocalKey } from '../src/state-dir.js';
import type { ChildProcess } from 'node:child_process';

const children: ChildProcess[] = [];
afterEach(() => children.splice(0).forEach((c) => c.kill('SIGKILL')));

const logLines = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.startsWith('daemon.log'))
    // Oldest first: daemon.log.3, .2, .1, then daemon.log.
    .sort((a, b) => b.length - a.length || b.localeCompare(a))
    .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean))
    .map((l) => JSON.parse(l) as { msg: string; path?: string });

describe('daemon.log', () => {
  it('rotates while the daemon runs, keeps 3 rotated files, and has every request line after a clean stop', async () => {
    const root = makeProject();
    const { child, url } = await serve(root, ['--port', '0'], { SVC_LOG_MAX_BYTES: '4096', SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: join(root, '.user-config') });
    children.push(child);
    const key = readLocalKey(root)!;
    const dir = join(root, '.svc', 'logs');
    // ~150 bytes a line: 4 KiB holds ~27, so 150 requests rotate about five times while running,
    // wrapping around the kept generations (the oldest are dropped, never more than 3 kept).
    for (let i = 0; i < 150; i++) await (await fetch(`${url}/api/v1/tasks?probe=${i}`, { headers: { authorization: `Bearer ${key}` } })).arrayBuffer();
    for (let i = 0; i < 50 && !readdirSync(dir).includes('daemon.log.3'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(readdirSync(dir).sort()).toEqual(['daemon.log', 'daemon.log.1', 'daemon.log.2', 'daemon.log.3']);

    // A burst just before the stop: its lines are still queued when SIGTERM comes, and must land.
    const requests = 20;
    await Promise.all(Array.from({ length: requests }, (_, i) => fetch(`${url}/healthz?n=${i}`).then((r) => r.arrayBuffer())));
    child.kill('SIGTERM');
    expect(await exited(child)).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['daemon.log', 'daemon.log.1', 'daemon.log.2', 'daemon.log.3']);
    const lines = logLines(dir);
    // The newest lines are all there: the burst's request lines, then the shutdown, nothing cut.
    expect(lines.at(-1)!.msg).toBe('stopped');
    expect(lines.filter((l) => l.msg === 'request' && l.path === '/healthz')).toHaveLength(requests);
  });
});
