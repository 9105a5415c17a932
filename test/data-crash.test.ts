import { afterAll, describe, expect, it } from 'vitest';
import { resolve } from '../src/resources/data/service.js';
import { DATA_RUNNER } from '../src/resources/data/sqlite-backend.js';
import { exited, serve } from './cli-helpers.js';
import { eventually, makeProject, startTestDaemon, type TestDaemon } from './harness.js';
import { readLocalKey } from '../src/state-dir.js';

// kill -9 in the middle of a stream of acknowledged batches: of the database's worker process, and
// of the daemon itself. Every batch that was answered 200 must be there afterwards.

const SCHEMA = { tables: { log: { columns: { seq: { type: 'integer', unique: true } } } } };

async function post(url: string, key: string, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json().catch(() => null) };
}

/** Sends batches one after another (4 streams at once) until stop(); returns the acknowledged seqs. */
function stream(url: string, key: string, stop: () => boolean, acked: number[] = []): Promise<{ acked: number[]; failed: number }> {
  let failed = 0;
  let seq = 0;
  const lane = async () => {
    while (!stop()) {
      const mine = ++seq;
      try {
        const r = await post(url, key, '/api/v1/data/journal/transactions', { operations: [{ op: 'insert', table: 'log', rows: [{ seq: mine * 2 }, { seq: mine * 2 + 1 }] }] });
        if (r.status === 200) acked.push(mine);
        else failed++;
      } catch {
        failed++;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  return Promise.all([lane(), lane(), lane(), lane()]).then(() => ({ acked, failed }));
}

async function present(url: string, key: string): Promise<Set<number>> {
  const seen = new Set<number>();
  for (let offset = 0; ; offset += 200) {
    const r = await post(url, key, '/api/v1/data/journal/transactions', { operations: [{ op: 'list', table: 'log', orderBy: [{ column: 'seq' }], limit: 200, offset }] });
    expect(r.status).toBe(200);
    for (const row of r.body.data[0].rows) seen.add(row.seq);
    if (r.body.data[0].nextOffset === null) return seen;
  }
}

describe('kill -9 during acknowledged batches', () => {
  let d: TestDaemon | undefined;
  afterAll(async () => {
    await d?.close();
  });

  it('of the worker process: no acknowledged batch is lost, later ones succeed', async () => {
    d = await startTestDaemon();
    expect((await d.api('POST', '/api/v1/data', { body: { name: 'journal', schema: SCHEMA } })).status).toBe(201);
    const runner = d.daemon.app.services.get(DATA_RUNNER);
    const id = (await resolve(d.daemon.app, 'journal')).id;
    let stopping = false;
    const acked: number[] = [];
    const running = stream(d.url, d.key, () => stopping, acked);
    const kills: number[] = [];
    for (let i = 0; i < 3; i++) {
      // Kill only once batches are being acknowledged by the current worker.
      const mark = acked.length;
      await eventually(() => acked.length >= mark + 5 && runner.pidOf(id) !== undefined && !kills.includes(runner.pidOf(id)!), 20_000);
      const pid = runner.pidOf(id)!;
      kills.push(pid);
      process.kill(pid, 'SIGKILL');
    }
    const mark = acked.length;
    await eventually(() => acked.length >= mark + 5, 20_000);
    stopping = true;
    await running;
    const seen = await present(d.url, d.key);
    for (const s of acked) {
      expect(seen.has(s * 2), `batch ${s} was acknowledged`).toBe(true);
      expect(seen.has(s * 2 + 1)).toBe(true);
    }
    // Batches are atomic: never one row of a batch without the other.
    for (const v of seen) expect(seen.has(v % 2 ? v - 1 : v + 1)).toBe(true);
  });

  it('of the daemon: after a restart every acknowledged batch is there', async () => {
    const root = makeProject();
    const env = { SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: `${root}/.user-config` };
    const first = await serve(root, ['--port', '0'], env);
    const key = readLocalKey(root)!;
    expect((await post(first.url, key, '/api/v1/data', { name: 'journal', schema: SCHEMA })).status).toBe(201);
    let stopping = false;
    const acked: number[] = [];
    const running = stream(first.url, key, () => stopping, acked);
    await eventually(() => acked.length >= 20, 20_000);
    first.child.kill('SIGKILL');
    await exited(first.child);
    stopping = true;
    await running;

    const second = await serve(root, ['--port', '0'], env);
    try {
      const seen = await present(second.url, key);
      for (const s of acked) expect(seen.has(s * 2), `batch ${s} was acknowledged`).toBe(true);
      for (const v of seen) expect(seen.has(v % 2 ? v - 1 : v + 1)).toBe(true);
    } finally {
      second.child.kill('SIGTERM');
      await exited(second.child);
    }
  });
});
