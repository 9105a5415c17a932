import Database from '../src/db/sqlite.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../src/kernel/errors.js';
import { openEntry } from '../src/resources/vault/service.js';
import { serve, svc } from './cli-helpers.js';
import { FakeClock } from './fake-clock.js';
import { makeProject, startTestDaemon, type TestDaemon } from './harness.js';
import { runCase, type ApiCase } from './scenarios.js';
import { statePg } from './state-pg.js';
import { tempDir } from './temp.js';

const hexKey = () => randomBytes(32).toString('hex');

/** A daemon whose master key comes from SVC_VAULT_KEY, with the keychain and the real home out of reach. */
function envKeyEnv(key: string, configDir = tempDir('svc-cfg-')): Record<string, string> {
  return { SVC_VAULT_KEY: key, SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: configDir };
}

/** A daemon that falls back to the key file (no SVC_VAULT_KEY, keychain off). */
function fileKeyEnv(configDir: string): Record<string, string> {
  return { SVC_KEYCHAIN: 'off', SVC_CONFIG_DIR: configDir };
}

async function addAgents(d: TestDaemon, ...names: string[]): Promise<void> {
  for (const name of names) expect((await d.api('POST', '/api/v1/agents', { body: { name } })).status).toBe(201);
}

const save = (d: TestDaemon, agent: string, service: string, credentials: Record<string, string>, extra: Record<string, unknown> = {}) =>
  d.api('POST', '/api/v1/vault/entries', { body: { agent, service, type: 'api_key', credentials, ...extra } });

const logRecords = (d: TestDaemon) => d.logs.map((l) => JSON.parse(l) as Record<string, unknown>);

/** What openEntry throws, for assertions. */
async function openFailure(d: TestDaemon, agent: string, service: string): Promise<AppError> {
  try {
    await openEntry(d.daemon.app, agent, service);
  } catch (err) {
    return err as AppError;
  }
  throw new Error(`${agent}/${service} opened`);
}

describe('vault API', () => {
  // The daemon's clock: entries' times are its, and a test moves it rather than waiting.
  const clock = new FakeClock(Date.parse('2031-02-03T04:05:06.000Z'));
  const iso = () => new Date(clock.now()).toISOString();
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startTestDaemon({ env: envKeyEnv(hexKey()), clock });
    await addAgents(d, 'dev', 'ops');
  });
  afterAll(async () => {
    await d.close();
  });

  const entry = (over: Record<string, unknown> = {}) => ({ agent: 'dev', service: 'github', type: 'api_key', credentials: { token: 't1' }, label: 'GitHub', ...over });

  // Order matters: each case runs against the state the previous ones left.
  const cases: ApiCase[] = [
    {
      name: 'save',
      method: 'POST',
      path: '/api/v1/vault/entries',
      body: entry(),
      status: 200,
      data: { agent: 'dev', service: 'github', type: 'api_key', keys: ['token'] },
      events: [{ name: 'vault:saved', data: { agent: 'dev', service: 'github', type: 'api_key', keys: ['token'] } }],
    },
    {
      name: 'save without label',
      method: 'POST',
      path: '/api/v1/vault/entries',
      body: { agent: 'dev', service: 'mail', type: 'smtp', credentials: { user: 'u', password: 'p' } },
      status: 200,
      data: { agent: 'dev', service: 'mail', type: 'smtp', keys: ['user', 'password'] },
      events: [{ name: 'vault:saved', data: { agent: 'dev', service: 'mail', type: 'smtp', keys: ['user', 'password'] } }],
    },
    {
      name: 'upsert replaces type and keys',
      method: 'POST',
      path: '/api/v1/vault/entries',
      body: entry({ type: 'oauth', credentials: { clientId: 'c', clientSecret: 's' }, label: 'GitHub app' }),
      status: 200,
      data: { agent: 'dev', service: 'github', type: 'oauth', keys: ['clientId', 'clientSecret'] },
      events: [{ name: 'vault:saved', data: { agent: 'dev', service: 'github', type: 'oauth', keys: ['clientId', 'clientSecret'] } }],
    },
    ...['smtp', 'imap', 'login', 'custom'].map((type) => ({
      name: `type ${type}`,
      method: 'POST',
      path: '/api/v1/vault/entries',
      body: entry({ agent: 'ops', service: `s-${type}`, type }),
      status: 200,
      data: { agent: 'ops', service: `s-${type}`, type, keys: ['token'] },
      events: [{ name: 'vault:saved' }],
    })),
    { name: 'type outside the enum', method: 'POST', path: '/api/v1/vault/entries', body: entry({ type: 'ssh' }), status: 400, code: 'invalid_request', detailPath: 'body.type', events: [] },
    { name: 'type missing', method: 'POST', path: '/api/v1/vault/entries', body: entry({ type: undefined }), status: 400, code: 'invalid_request', detailPath: 'body.type', events: [] },
    { name: 'empty agent', method: 'POST', path: '/api/v1/vault/entries', body: entry({ agent: '' }), status: 400, code: 'invalid_request', detailPath: 'body.agent', events: [] },
    { name: 'empty service', method: 'POST', path: '/api/v1/vault/entries', body: entry({ service: '' }), status: 400, code: 'invalid_request', detailPath: 'body.service', events: [] },
    {
      name: 'credentials missing',
      method: 'POST',
      path: '/api/v1/vault/entries',
      body: entry({ credentials: undefined }),
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.credentials',
      events: [],
    },
    { name: 'no credentials', method: 'POST', path: '/api/v1/vault/entries', body: entry({ credentials: {} }), status: 400, code: 'invalid_request', detailPath: 'body.credentials', events: [] },
    {
      name: 'credential not a string',
      method: 'POST',
      path: '/api/v1/vault/entries',
      body: entry({ credentials: { port: 25 } }),
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.credentials.port',
      events: [],
    },
    { name: 'unknown property', method: 'POST', path: '/api/v1/vault/entries', body: entry({ secret: 'x' }), status: 400, code: 'invalid_request', detailPath: 'body.secret', events: [] },
    { name: 'unknown agent', method: 'POST', path: '/api/v1/vault/entries', body: entry({ agent: 'ghost' }), status: 404, code: 'not_found', events: [] },
    { name: 'limit 0', method: 'GET', path: '/api/v1/vault/entries?limit=0', status: 400, code: 'invalid_request', detailPath: 'query.limit', events: [] },
    { name: 'bad cursor', method: 'GET', path: '/api/v1/vault/entries?cursor=nope', status: 400, code: 'invalid_request', detailPath: 'query.cursor', events: [] },
    { name: 'unknown query field', method: 'GET', path: '/api/v1/vault/entries?service=x', status: 400, code: 'invalid_request', events: [] },
    {
      name: 'remove',
      method: 'DELETE',
      path: '/api/v1/vault/entries/dev/mail',
      status: 200,
      data: { removed: true },
      events: [{ name: 'vault:removed', data: { agent: 'dev', service: 'mail' } }],
    },
    { name: 'remove again', method: 'DELETE', path: '/api/v1/vault/entries/dev/mail', status: 404, code: 'not_found', events: [] },
    { name: 'remove for unknown agent', method: 'DELETE', path: '/api/v1/vault/entries/ghost/mail', status: 404, code: 'not_found', events: [] },
  ];

  it.each(cases.map((c, i) => [i, c.name, c] as const))('%i %s', async (_i, _n, c) => {
    await runCase(d, c);
  });

  it('lists entries by agent and service with key names and times, never values', async () => {
    const res = await d.api('GET', '/api/v1/vault/entries?agent=dev');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      { agent: 'dev', service: 'github', type: 'oauth', label: 'GitHub app', keys: ['clientId', 'clientSecret'], createdAt: expect.any(String), updatedAt: expect.any(String) },
    ]);
    const all = await d.api('GET', '/api/v1/vault/entries');
    expect(all.body.data.map((e: { agent: string; service: string }) => `${e.agent}/${e.service}`)).toEqual(['dev/github', 'ops/s-custom', 'ops/s-imap', 'ops/s-login', 'ops/s-smtp']);
    expect(all.headers.get('x-next-cursor')).toBeNull();
    expect((await d.api('GET', '/api/v1/vault/entries?agent=nobody')).body.data).toEqual([]);
  });

  it('an upsert keeps createdAt and moves updatedAt; openEntry gives the latest credentials', async () => {
    const [before] = (await d.api('GET', '/api/v1/vault/entries?agent=dev')).body.data;
    expect(before.updatedAt).toBe(iso());
    expect(await openEntry(d.daemon.app, 'dev', 'github')).toEqual({ clientId: 'c', clientSecret: 's' });
    clock.advance(5);
    expect((await save(d, 'dev', 'github', { token: 't2' })).status).toBe(200);
    const [after] = (await d.api('GET', '/api/v1/vault/entries?agent=dev')).body.data;
    expect(after.createdAt).toBe(before.createdAt);
    expect(after.updatedAt).toBe(iso());
    expect(Date.parse(after.updatedAt) - Date.parse(before.updatedAt)).toBe(5);
    expect(after.label).toBeNull();
    expect(await openEntry(d.daemon.app, 'dev', 'github')).toEqual({ token: 't2' });
  });

  it('pages with limit and X-Next-Cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await d.api('GET', `/api/v1/vault/entries?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((e: { agent: string; service: string }) => `${e.agent}/${e.service}`));
      cursor = res.headers.get('x-next-cursor');
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(['dev/github', 'ops/s-custom', 'ops/s-imap', 'ops/s-login', 'ops/s-smtp']);
  });

  it('openEntry of a missing entry is a 404 AppError', async () => {
    expect(await openFailure(d, 'dev', 'nothing')).toMatchObject({ code: 'not_found' });
  });

  it('removing an agent removes its entries (a later agent of that name inherits nothing)', async () => {
    await addAgents(d, 'temp');
    expect((await save(d, 'temp', 'x', { token: 'y' })).status).toBe(200);
    expect((await d.api('DELETE', '/api/v1/agents/temp')).status).toBe(200);
    await addAgents(d, 'temp');
    expect((await d.api('GET', '/api/v1/vault/entries?agent=temp')).body.data).toEqual([]);
  });
});

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

/**
 * Reads an SSE stream into a string until aborted. `seen(s)` resolves as soon as `s` has come (it
 * looks at each chunk as it arrives), and fails if it has not within 5 s.
 */
function collectSse(url: string, key: string): { text: () => string; stop: () => void; ready: Promise<void>; seen: (s: string) => Promise<void> } {
  const ctrl = new AbortController();
  let text = '';
  let onReady!: () => void;
  const ready = new Promise<void>((r) => (onReady = r));
  const looks = new Set<() => void>();
  void (async () => {
    try {
      const res = await fetch(`${url}/v1/events`, { headers: { authorization: `Bearer ${key}` }, signal: ctrl.signal });
      expect(res.status).toBe(200);
      onReady();
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true });
        for (const look of looks) look();
      }
    } catch {
      // aborted
    } finally {
      onReady();
    }
  })();
  const seen = (s: string) =>
    new Promise<void>((resolve, reject) => {
      const look = () => {
        if (!text.includes(s)) return;
        looks.delete(look);
        clearTimeout(bound);
        resolve();
      };
      const bound = setTimeout(() => {
        looks.delete(look);
        reject(new Error(`${JSON.stringify(s)} did not come on the stream within 5 s`));
      }, 5_000);
      looks.add(look);
      look();
    });
  return { text: () => text, stop: () => ctrl.abort(), ready, seen };
}

describe('nothing leaks', () => {
  // Provokes its error line by editing .svc/state.sqlite from a second connection: on state-pg the
  // entries are not in that file.
  it.skipIf(statePg())('no credential value (or the master key) appears in .svc/, responses, events, SSE frames or logs', async () => {
    const key = hexKey();
    const rotatedKey = hexKey();
    const d = await startTestDaemon({ env: envKeyEnv(key), keepRoot: true });
    const responses: string[] = [];
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await d.api(method, path, { body });
      responses.push(JSON.stringify(res.body), JSON.stringify([...res.headers]));
      return res;
    };
    const markers = Array.from({ length: 8 }, (_, i) => `LEAKMARK${i}x${randomUUID().replaceAll('-', '')}`);
    const sse = collectSse(d.url, d.key);
    try {
      await sse.ready;
      await addAgents(d, 'dev', 'ops');
      expect((await api('POST', '/api/v1/vault/entries', { agent: 'dev', service: 'mail', type: 'smtp', credentials: { user: markers[0], password: markers[1] }, label: 'mail' })).status).toBe(200);
      expect((await api('POST', '/api/v1/vault/entries', { agent: 'ops', service: 'aws', type: 'api_key', credentials: { secret: markers[2] } })).status).toBe(200);
      // Upsert: the replaced blob must not leave its plaintext behind either.
      expect((await api('POST', '/api/v1/vault/entries', { agent: 'dev', service: 'mail', type: 'smtp', credentials: { user: markers[0], password: markers[3] } })).status).toBe(200);
      expect((await api('POST', '/api/v1/vault/entries', { agent: 'dev', service: 'gone', type: 'login', credentials: { password: markers[4] } })).status).toBe(200);
      expect((await api('DELETE', '/api/v1/vault/entries/dev/gone')).status).toBe(200);
      // Refused requests carrying values: no echo in the answer or the log.
      expect((await api('POST', '/api/v1/vault/entries', { agent: 'dev', service: 'x', type: 'ssh', credentials: { k: markers[5] } })).status).toBe(400);
      expect((await api('POST', '/api/v1/vault/entries', { agent: 'ghost', service: 'x', type: 'custom', credentials: { k: markers[6] } })).status).toBe(404);
      expect((await api('POST', '/api/v1/vault/entries', { agent: 'dev', service: 'x', type: 'custom', credentials: { k: markers[7] }, extra: markers[7] })).status).toBe(400);
      expect((await api('GET', '/api/v1/vault/entries')).status).toBe(200);
      expect((await api('GET', '/api/v1/vault/entries?agent=dev')).status).toBe(200);
      expect((await api('POST', '/api/v1/vault/rotate-key', { newKey: rotatedKey })).body).toEqual({ ok: true, data: { rotated: 2, source: 'env' } });

      // The values are really there, sealed: the scan below must not pass for want of data.
      expect(await openEntry(d.daemon.app, 'dev', 'mail')).toEqual({ user: markers[0], password: markers[3] });
      expect(await openEntry(d.daemon.app, 'ops', 'aws')).toEqual({ secret: markers[2] });
      // A failed open writes an error line: it must name the entry, not its content.
      const db = new Database(join(d.root, '.svc', 'state.sqlite'));
      db.prepare("UPDATE vault_entries SET sealed = (SELECT sealed FROM vault_entries WHERE agent = 'dev'), nonce = (SELECT nonce FROM vault_entries WHERE agent = 'dev') WHERE agent = 'ops'").run();
      db.close();
      expect((await openFailure(d, 'ops', 'aws')).code).toBe('internal');

      await sse.seen('event: vault:removed');
    } finally {
      sse.stop();
    }
    const events = await d.daemon.app.events.since(0, 10_000);
    expect(events.filter((e) => e.name.startsWith('vault:')).map((e) => e.name)).toEqual(['vault:saved', 'vault:saved', 'vault:saved', 'vault:saved', 'vault:removed']);
    const haystacks: [string, Buffer | string][] = [
      ['responses', responses.join('\n')],
      ['events table', JSON.stringify(events)],
      ['SSE frames', sse.text()],
      ['daemon log', d.logs.join('')],
    ];
    expect(sse.text()).toContain('event: vault:saved');
    const scanState = (when: string) => {
      for (const f of filesUnder(join(d.root, '.svc'))) haystacks.push([`${when} ${f}`, readFileSync(f)]);
    };
    scanState('open');
    expect(existsSync(join(d.root, '.svc', 'state.sqlite-wal'))).toBe(true);
    await d.close();
    scanState('closed');
    rmSync(d.root, { recursive: true, force: true });

    for (const [where, hay] of haystacks) {
      const buf = Buffer.isBuffer(hay) ? hay : Buffer.from(hay, 'utf8');
      for (const m of markers) expect(buf.includes(m), `${m} found in ${where}`).toBe(false);
      for (const k of [key, rotatedKey]) {
        expect(buf.includes(k), `the master key found in ${where}`).toBe(false);
        expect(buf.includes(Buffer.from(k, 'hex')), `the raw master key found in ${where}`).toBe(false);
      }
    }
  });

  it('a real `svc serve` prints no value on stdout or stderr when `svc vault set` prompts for them', async () => {
    const root = makeProject();
    const env = envKeyEnv(hexKey());
    const server = await serve(root, ['--port', '0'], env);
    const markers = [`CLIMARK${randomUUID()}`, `CLIMARK${randomUUID()}`, `CLIMARK${randomUUID()}`];
    const cliOut: string[] = [];
    const run = async (args: string[], opts: { input?: string; env?: Record<string, string> } = {}) => {
      const r = await svc(['--project', root, ...args], opts);
      cliOut.push(r.stdout, r.stderr);
      return r;
    };
    try {
      expect((await run(['agents', 'add', 'dev'])).code).toBe(0);
      // stdin is not a TTY here: one line per prompted key, in order.
      const set = await run(['vault', 'set', 'dev', 'mail', '--type', 'smtp', '--label', 'Mail', 'user=alice', 'password', 'pin'], { input: `${markers[0]}\n${markers[1]}\n` });
      expect(set.code, set.stderr).toBe(0);
      expect(set.stdout).toBe('saved dev/mail (smtp): user, password, pin\n');
      const fromEnv = await run(['vault', 'set', 'dev', 'api', '--type', 'api_key', '--from-env', 'token=MY_TOKEN'], { env: { MY_TOKEN: markers[2] } });
      expect(fromEnv.code, fromEnv.stderr).toBe(0);
      const short = await run(['vault', 'set', 'dev', 'x', '--type', 'custom', 'a', 'b'], { input: 'only-one\n' });
      expect(short.code).toBe(2);
      expect(short.stderr).toContain('no value for b');
      const ls = await run(['--json', 'vault', 'ls', '--agent', 'dev']);
      expect(JSON.parse(ls.stdout).map((e: { service: string; keys: string[] }) => [e.service, e.keys])).toEqual([
        ['api', ['token']],
        ['mail', ['user', 'password', 'pin']],
      ]);
      expect((await run(['vault', 'ls'])).stdout).toMatch(/^AGENT\s+SERVICE\s+TYPE\s+LABEL\s+KEYS\s+UPDATED\n/);
      const rot = await run(['vault', 'rotate-key', '--yes']);
      expect(rot.code).toBe(1);
      expect(rot.stderr).toContain('SVC_VAULT_KEY');
      expect((await run(['vault', 'rm', 'dev', 'api', '--yes'])).stdout).toBe('removed dev/api\n');
      expect((await run(['vault', 'set', 'dev', 'y', '--type', 'ssh', 'a=b'])).code).toBe(2);
    } finally {
      server.child.kill('SIGTERM');
      await new Promise((r) => server.child.once('exit', r));
    }
    const logFile = readFileSync(join(root, '.svc', 'logs', 'daemon.log'), 'utf8');
    expect(server.output()).toContain('"msg":"vault master key","source":"env"');
    const everything = [server.output(), logFile, ...cliOut, ...filesUnder(join(root, '.svc')).map((f) => readFileSync(f).toString('latin1'))].join('\n');
    for (const m of markers) expect(everything.includes(m), m).toBe(false);
    rmSync(root, { recursive: true, force: true });
  });
});

// Tampers through a second connection to .svc/state.sqlite, as anyone with the file could: on
// state-pg the entries are not in that file.
describe.skipIf(statePg())('tampered or moved blobs', () => {
  let d: TestDaemon;
  let db: Database.Database;
  beforeAll(async () => {
    d = await startTestDaemon({ env: envKeyEnv(hexKey()) });
    await addAgents(d, 'dev', 'ops');
    for (const [agent, service, v] of [
      ['dev', 'github', 'a'],
      ['ops', 'aws', 'b'],
      ['ops', 'gcp', 'c'],
    ]) {
      expect((await save(d, agent!, service!, { token: v! })).status).toBe(200);
    }
    // A second connection, as anyone with the file would have.
    db = new Database(join(d.root, '.svc', 'state.sqlite'));
  });
  afterAll(async () => {
    db.close();
    await d.close();
  });

  it('a blob moved to another entry fails to open with a clear error', async () => {
    db.prepare(
      `UPDATE vault_entries SET (sealed, nonce) = (SELECT sealed, nonce FROM vault_entries WHERE agent = 'dev' AND service = 'github')
       WHERE agent = 'ops' AND service = 'aws'`,
    ).run();
    const err = await openFailure(d, 'ops', 'aws');
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe('internal');
    expect(err.message).toMatch(/^Vault entry "ops\/aws" cannot be opened: authentication failed/);
    expect(await openEntry(d.daemon.app, 'dev', 'github')).toEqual({ token: 'a' });
  });

  it('a flipped byte fails to open with a clear error', async () => {
    const row = db.prepare("SELECT sealed FROM vault_entries WHERE agent = 'dev'").get() as { sealed: Buffer };
    row.sealed[0]! ^= 0xff;
    db.prepare("UPDATE vault_entries SET sealed = ? WHERE agent = 'dev'").run(row.sealed);
    expect((await openFailure(d, 'dev', 'github')).message).toMatch(/^Vault entry "dev\/github" cannot be opened: authentication failed/);
    expect(await openEntry(d.daemon.app, 'ops', 'gcp')).toEqual({ token: 'c' });
  });

  it('rotate-key refuses to re-seal a bad entry, changes nothing, and the daemon keeps serving', async () => {
    const before = db.prepare('SELECT agent, service, sealed, nonce FROM vault_entries ORDER BY agent, service').all();
    const res = await d.api('POST', '/api/v1/vault/rotate-key', { body: { newKey: hexKey() } });
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ ok: false, code: 'internal' });
    expect(res.body.error).toMatch(/Vault entry "dev\/github" cannot be opened/);
    expect(db.prepare('SELECT agent, service, sealed, nonce FROM vault_entries ORDER BY agent, service').all()).toEqual(before);
    expect(await openEntry(d.daemon.app, 'ops', 'gcp')).toEqual({ token: 'c' });
    expect((await d.api('GET', '/api/v1/vault/entries')).body.data).toHaveLength(3);
    expect((await d.api('GET', '/healthz')).status).toBe(200);
    expect(
      logRecords(d)
        .filter((r) => r.msg === 'a vault entry failed to authenticate')
        .map((r) => `${r.agent}/${r.service}`),
    ).toContain('dev/github');
  });
});

// On a PostgreSQL state the key comes only from SVC_VAULT_KEY or state.vaultKeyFile (never a
// keychain or the user's config dir), a key other than the recorded one is refused even with an
// empty vault, and rotation from one daemon is refused: test/state-shared.test.ts covers that.
const sqliteKeyRules = !statePg();

describe('master key at start', () => {
  it.runIf(sqliteKeyRules)('a wrong SVC_VAULT_KEY is a start-up error naming the source, not an empty vault', async () => {
    const d = await startTestDaemon({ env: envKeyEnv(hexKey()), keepRoot: true });
    await addAgents(d, 'dev');
    expect((await save(d, 'dev', 'github', { token: 'x' })).status).toBe(200);
    await d.close();
    const wrong = hexKey();
    const err = await startTestDaemon({ root: d.root, env: envKeyEnv(wrong), keepRoot: true }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/^the vault master key from SVC_VAULT_KEY cannot open the existing entries \(1\)/);
    expect(err?.message).not.toContain(wrong);
    rmSync(d.root, { recursive: true, force: true });
  });

  it('a malformed SVC_VAULT_KEY is refused without being echoed', async () => {
    const bad = 'abc123-not-hex';
    const err = await startTestDaemon({ env: envKeyEnv(bad) }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/SVC_VAULT_KEY is neither 64 hexadecimal characters nor 32 bytes in base64/);
    expect(err?.message).not.toContain(bad);
  });

  it.runIf(sqliteKeyRules)('without SVC_VAULT_KEY or a keychain, the first start creates a 0600 key file and later starts use it', async () => {
    const cfg = tempDir('svc-cfg-');
    const d = await startTestDaemon({ env: fileKeyEnv(cfg), keepRoot: true });
    const keyFile = join(cfg, 'keys', `${d.daemon.app.projectId}.key`);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(cfg, 'keys')).mode & 0o777).toBe(0o700);
    const key = readFileSync(keyFile, 'utf8');
    expect(key).toMatch(/^[0-9a-f]{64}\n$/);
    const start = logRecords(d).find((r) => r.msg === 'vault master key');
    expect(start).toMatchObject({ source: 'file', where: `the key file ${keyFile}`, keychainSkipped: 'SVC_KEYCHAIN=off' });
    expect(d.logs.join('')).not.toContain(key.trim());
    await addAgents(d, 'dev');
    expect((await save(d, 'dev', 'github', { token: 'x' })).status).toBe(200);
    await d.close();

    const again = await startTestDaemon({ root: d.root, env: fileKeyEnv(cfg), keepRoot: true });
    expect(readFileSync(keyFile, 'utf8')).toBe(key);
    expect(await openEntry(again.daemon.app, 'dev', 'github')).toEqual({ token: 'x' });
    expect(logRecords(again).some((r) => r.msg === 'created the vault master key')).toBe(false);
    await again.close();

    // The same key through SVC_VAULT_KEY opens the same vault: explicit beats ambient.
    const viaEnv = await startTestDaemon({ root: d.root, env: envKeyEnv(key.trim(), cfg), keepRoot: true });
    expect(await openEntry(viaEnv.daemon.app, 'dev', 'github')).toEqual({ token: 'x' });
    await viaEnv.close();

    writeFileSync(keyFile, hexKey() + '\n', { mode: 0o600 });
    await expect(startTestDaemon({ root: d.root, env: fileKeyEnv(cfg), keepRoot: true })).rejects.toThrow(`the vault master key from the key file ${keyFile} cannot open the existing entries (1)`);
    rmSync(keyFile);
    await expect(startTestDaemon({ root: d.root, env: fileKeyEnv(cfg), keepRoot: true })).rejects.toThrow(
      /^no vault master key found in the key file .*, but the vault holds 1 entries sealed under one/,
    );
    expect(existsSync(keyFile)).toBe(false);
    rmSync(d.root, { recursive: true, force: true });
    rmSync(cfg, { recursive: true, force: true });
  });

  it.runIf(sqliteKeyRules)('a key file others can read is tightened to 0600', async () => {
    const cfg = tempDir('svc-cfg-');
    const d = await startTestDaemon({ env: fileKeyEnv(cfg), keepRoot: true });
    const keyFile = join(cfg, 'keys', `${d.daemon.app.projectId}.key`);
    await d.close();
    const { chmodSync } = await import('node:fs');
    chmodSync(keyFile, 0o644);
    const again = await startTestDaemon({ root: d.root, env: fileKeyEnv(cfg) });
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(logRecords(again).some((r) => r.level === 'warn' && String(r.msg).includes('was readable by other users'))).toBe(true);
    await again.close();
    rmSync(cfg, { recursive: true, force: true });
  });
});

describe.runIf(sqliteKeyRules)('rotate-key', () => {
  it('file source: re-seals every entry, stores the new key in the file, and the old key no longer opens', async () => {
    const cfg = tempDir('svc-cfg-');
    const d = await startTestDaemon({ env: fileKeyEnv(cfg), keepRoot: true });
    const keyFile = join(cfg, 'keys', `${d.daemon.app.projectId}.key`);
    const oldKey = readFileSync(keyFile, 'utf8').trim();
    await addAgents(d, 'dev', 'ops');
    expect((await save(d, 'dev', 'github', { token: 'a' })).status).toBe(200);
    expect((await save(d, 'ops', 'aws', { id: 'b', secret: 'c' })).status).toBe(200);
    const before = (await d.daemon.app.db.prepare('SELECT sealed FROM vault_entries ORDER BY agent').all()) as { sealed: Buffer }[];

    const res = await d.api('POST', '/api/v1/vault/rotate-key', { body: {} });
    expect(res.body).toEqual({ ok: true, data: { rotated: 2, source: 'file' } });
    const newKey = readFileSync(keyFile, 'utf8').trim();
    expect(newKey).toMatch(/^[0-9a-f]{64}$/);
    expect(newKey).not.toBe(oldKey);
    expect(existsSync(`${keyFile}.next`)).toBe(false);
    const after = (await d.daemon.app.db.prepare('SELECT sealed FROM vault_entries ORDER BY agent').all()) as { sealed: Buffer }[];
    after.forEach((r, i) => expect(r.sealed.equals(before[i]!.sealed)).toBe(false));
    expect(await openEntry(d.daemon.app, 'ops', 'aws')).toEqual({ id: 'b', secret: 'c' });
    // Saves after the rotation use the new key.
    expect((await save(d, 'dev', 'mail', { password: 'm' })).status).toBe(200);
    await d.close();

    await expect(startTestDaemon({ root: d.root, env: envKeyEnv(oldKey, cfg), keepRoot: true })).rejects.toThrow(/cannot open the existing entries \(3\)/);
    const withNew = await startTestDaemon({ root: d.root, env: fileKeyEnv(cfg), keepRoot: true });
    expect(await openEntry(withNew.daemon.app, 'dev', 'github')).toEqual({ token: 'a' });
    expect(await openEntry(withNew.daemon.app, 'dev', 'mail')).toEqual({ password: 'm' });
    await withNew.close();
    rmSync(d.root, { recursive: true, force: true });
    rmSync(cfg, { recursive: true, force: true });
  });

  it('file source: a rotation interrupted after re-sealing is finished at the next start', async () => {
    const cfg = tempDir('svc-cfg-');
    const d = await startTestDaemon({ env: fileKeyEnv(cfg), keepRoot: true });
    const keyFile = join(cfg, 'keys', `${d.daemon.app.projectId}.key`);
    const oldKey = readFileSync(keyFile, 'utf8');
    await addAgents(d, 'dev');
    expect((await save(d, 'dev', 'github', { token: 'a' })).status).toBe(200);
    expect((await d.api('POST', '/api/v1/vault/rotate-key', { body: {} })).status).toBe(200);
    const newKey = readFileSync(keyFile, 'utf8');
    await d.close();
    // The state a crash between committing the re-seal and promoting the key would leave.
    writeFileSync(keyFile, oldKey, { mode: 0o600 });
    writeFileSync(`${keyFile}.next`, newKey, { mode: 0o600 });

    const again = await startTestDaemon({ root: d.root, env: fileKeyEnv(cfg), keepRoot: true });
    expect(logRecords(again).some((r) => r.msg === 'finished an interrupted vault key rotation')).toBe(true);
    expect(readFileSync(keyFile, 'utf8')).toBe(newKey);
    expect(existsSync(`${keyFile}.next`)).toBe(false);
    expect(await openEntry(again.daemon.app, 'dev', 'github')).toEqual({ token: 'a' });
    await again.close();

    // A crash before the commit leaves a stale "next" key: the current key wins and the slot is emptied.
    writeFileSync(`${keyFile}.next`, hexKey() + '\n', { mode: 0o600 });
    const third = await startTestDaemon({ root: d.root, env: fileKeyEnv(cfg) });
    expect(existsSync(`${keyFile}.next`)).toBe(false);
    expect(await openEntry(third.daemon.app, 'dev', 'github')).toEqual({ token: 'a' });
    await third.close();
    rmSync(cfg, { recursive: true, force: true });
  });

  it('env source: refused without a new key (the daemon cannot change SVC_VAULT_KEY); with one, the new key opens and the old does not', async () => {
    const oldKey = hexKey();
    const newKey = hexKey();
    const cfg = tempDir('svc-cfg-');
    const d = await startTestDaemon({ env: envKeyEnv(oldKey, cfg), keepRoot: true });
    await addAgents(d, 'dev');
    expect((await save(d, 'dev', 'github', { token: 'a' })).status).toBe(200);

    const refused = await d.api('POST', '/api/v1/vault/rotate-key', { body: {} });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('conflict');
    expect(refused.body.error).toContain('SVC_VAULT_KEY');
    expect(refused.body.error).toContain('svc vault rotate-key --new-key-env');
    expect((await d.api('POST', '/api/v1/vault/rotate-key', { body: { newKey: 'short' } })).status).toBe(400);
    expect((await d.api('POST', '/api/v1/vault/rotate-key', { body: { newKey: oldKey } })).status).toBe(400);

    expect((await d.api('POST', '/api/v1/vault/rotate-key', { body: { newKey } })).body).toEqual({ ok: true, data: { rotated: 1, source: 'env' } });
    expect(await openEntry(d.daemon.app, 'dev', 'github')).toEqual({ token: 'a' });
    expect(existsSync(join(cfg, 'keys'))).toBe(false);
    await d.close();

    await expect(startTestDaemon({ root: d.root, env: envKeyEnv(oldKey, cfg), keepRoot: true })).rejects.toThrow(/^the vault master key from SVC_VAULT_KEY cannot open the existing entries \(1\)/);
    const withNew = await startTestDaemon({ root: d.root, env: envKeyEnv(newKey, cfg) });
    expect(await openEntry(withNew.daemon.app, 'dev', 'github')).toEqual({ token: 'a' });
    await withNew.close();
    rmSync(cfg, { recursive: true, force: true });
  });
});
