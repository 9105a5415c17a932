import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { stateTables } from '../src/db/transfer.js';
import { NOT_COPIED, STATE_TABLES } from '../src/state-schema.js';
import { openEntry } from '../src/resources/vault/service.js';
import { webhookSecrets } from '../src/resources/webhooks/service.js';
import { svc } from './cli-helpers.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { freshStateDatabase } from './state-pg.js';

// Moving a project from SQLite to PostgreSQL loses nothing: svc state export, then svc state import
// into a new PostgreSQL state, then the daemon on it answers every read as before, opens the vault
// with the same key, and goes on numbering events after the last one.

const noPg = inject('pgUrl') === '';
if (noPg) console.warn(`state-transfer: skipped, ${inject('pgSkip')}`);

const open: TestDaemon[] = [];
afterAll(async () => {
  for (const d of open.splice(0)) await d.close().catch(() => undefined);
});

it('the export covers every table of the schema but the two it leaves on purpose', async () => {
  const d = await startTestDaemon();
  open.push(d);
  const tables = (await stateTables(d.daemon.app.db)).filter((t) => !NOT_COPIED.includes(t));
  expect([...tables].sort()).toEqual([...STATE_TABLES].sort());
});

describe.skipIf(noPg)('SQLite → PostgreSQL with svc state export / import', () => {
  it('every resource reads back the same, the vault opens with the same key, event ids go on', async () => {
    const src = await startTestDaemon({ keepRoot: true });
    const root = src.root;
    const ok = async (method: string, path: string, body?: unknown) => {
      const r = await src.api(method, path, body === undefined ? {} : { body });
      expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBeLessThan(300);
      return r.body.data;
    };
    await ok('POST', '/api/v1/agents/teams', { name: 'core' });
    await ok('POST', '/api/v1/agents', { name: 'lead', team: 'core' });
    // Named to sort before the agent it reports to: the import must put "lead" in first.
    await ok('POST', '/api/v1/agents', { name: 'dev', reportsTo: 'lead' });
    const a = await ok('POST', '/api/v1/tasks', { title: 'first', labels: ['x'] });
    const b = await ok('POST', '/api/v1/tasks', { title: 'second', dependsOn: [a.id], assignTo: 'dev' });
    await ok('POST', `/api/v1/tasks/${a.id}/claim`, { agent: 'lead' });
    await ok('POST', '/api/v1/missions', { name: 'm', goal: 'g', tasks: [{ title: 'in mission' }] });
    await ok('POST', '/api/v1/approvals', { taskId: b.id, requestedBy: 'dev', title: 'ok?' });
    await ok('POST', '/api/v1/vault/entries', { agent: 'dev', service: 'gh', type: 'api_key', credentials: { token: 'moved-token' } });
    const hook = await ok('POST', '/v1/webhooks', { url: 'https://example.com/hook', events: ['task:*'] });
    const reads = ['/api/v1/tasks?limit=100', '/api/v1/agents', '/api/v1/agents/teams', '/api/v1/missions', '/api/v1/approvals', '/v1/webhooks', '/api/v1/vault/entries'];
    const before = await Promise.all(reads.map(async (p) => (await src.api('GET', p)).body.data));
    const events = await src.daemon.app.events.since(0, 10_000);
    const lastId = await src.daemon.app.events.lastId();
    const projectId = src.daemon.app.projectId;
    await src.close();

    const exported = await svc(['state', 'export', 'state.jsonl'], { cwd: root });
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toMatch(/exported \d+ rows from .*state\.sqlite/);
    const file = readFileSync(join(root, 'state.jsonl'), 'utf8');
    expect(file).not.toContain('moved-token');

    const url = await freshStateDatabase();
    const imported = await svc(['state', 'import', 'state.jsonl'], { cwd: root, env: { SVC_STATE_URL: url } });
    expect(imported.code, imported.stderr).toBe(0);
    // The vault key the SQLite daemon made (a key file, the keychain being off in tests).
    const keysDir = join(root, '.user-config', 'keys');
    const keyHex = readFileSync(join(keysDir, readdirSync(keysDir).find((f) => f === `${projectId}.key`)!), 'utf8').trim();

    // A daemon elsewhere (no .svc/webhooks.key) started first would seal the imported secrets away: refused.
    const elsewhere = await startTestDaemon({ env: { SVC_STATE_URL: url, SVC_VAULT_KEY: keyHex } }).then(
      (d) => (void d.close(), null),
      (e: Error) => e,
    );
    expect(elsewhere?.message).toMatch(/start first the daemon whose project has that \.svc\/webhooks\.key/);
    const dst = await startTestDaemon({ root, keepRoot: true, env: { SVC_STATE_URL: url, SVC_VAULT_KEY: keyHex } });
    open.push(dst);
    expect(dst.daemon.app.projectId).toBe(projectId);
    const after = await Promise.all(reads.map(async (p) => (await dst.api('GET', p)).body.data));
    expect(after).toEqual(before);
    // Every event carried over as it was; after them, the new daemon's runner said it is online.
    const carried = await dst.daemon.app.events.since(0, 10_000);
    expect(carried.slice(0, events.length)).toEqual(events);
    expect(carried.slice(events.length).map((e) => e.name)).toEqual(['runner:online']);
    expect(await openEntry(dst.daemon.app, 'dev', 'gh')).toEqual({ token: 'moved-token' });
    // The webhook's signing secret still opens: the new state took this project's webhooks.key along.
    expect(await webhookSecrets(dst.daemon.app)).toContain(hook.secret);
    await dst.api('POST', '/api/v1/tasks', { body: { title: 'after the move' } });
    expect((await dst.daemon.app.events.since(lastId, 10)).map((e) => [e.id, e.name])).toEqual([
      [lastId + 1, 'runner:online'],
      [lastId + 2, 'task:created'],
    ]);

    // An export of the PostgreSQL state does not go back into SQLite.
    const back = await svc(['state', 'export', 'from-pg.jsonl'], { cwd: root, env: { SVC_STATE_URL: url } });
    expect(back.code, back.stderr).toBe(0);
    const sqliteRoot = (await startTestDaemon({ keepRoot: true }).then(async (d) => (await d.close(), d))).root;
    const { copyFileSync } = await import('node:fs');
    copyFileSync(join(root, 'from-pg.jsonl'), join(sqliteRoot, 'from-pg.jsonl'));
    const intoSqlite = await svc(['state', 'import', 'from-pg.jsonl'], { cwd: sqliteRoot });
    expect(intoSqlite.code).toBe(1);
    expect(intoSqlite.stderr).toMatch(/goes into a PostgreSQL state only/);

    // Into a state that is no longer empty: refused, and nothing changes.
    const again = await svc(['state', 'import', 'state.jsonl'], { cwd: root, env: { SVC_STATE_URL: url } });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/daemon\(s\) run on|not empty/);
  });

  it('a cut or foreign file is refused before anything is written', async () => {
    const src = await startTestDaemon({ keepRoot: true });
    await src.api('POST', '/api/v1/agents', { body: { name: 'solo' } });
    await src.close();
    expect((await svc(['state', 'export', 'full.jsonl'], { cwd: src.root })).code).toBe(0);
    const lines = readFileSync(join(src.root, 'full.jsonl'), 'utf8').trim().split('\n');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(src.root, 'cut.jsonl'), lines.slice(0, -1).join('\n'));
    writeFileSync(join(src.root, 'foreign.jsonl'), '{"hello":"world"}\n');
    writeFileSync(join(src.root, 'evil.jsonl'), [lines[0], JSON.stringify({ t: 'agents; DROP TABLE tasks', r: {} })].join('\n'));
    const url = await freshStateDatabase();
    for (const [f, msg] of [
      ['cut.jsonl', /cut short/],
      ['foreign.jsonl', /not the header of an svc state export/],
      ['evil.jsonl', /names no state table/],
    ] as const) {
      const r = await svc(['state', 'import', f], { cwd: src.root, env: { SVC_STATE_URL: url } });
      expect(r.code, f).toBe(1);
      expect(r.stderr).toMatch(msg);
      expect(r.stderr).toMatch(/nothing was imported/);
    }
  });
});
