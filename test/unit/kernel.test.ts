import Database from '../../src/db/sqlite.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseConfig } from '../../src/config/load.js';
import { migrate } from '../../src/db/migrate.js';
import { SqliteState } from '../../src/db/sqlite-state.js';
import { authenticate, sha256 } from '../../src/kernel/auth.js';
import { hostAllowed, originAllowed } from '../../src/kernel/guards.js';
import { ALLOWED_ORIGIN, FOREIGN_ORIGINS, SAME_ORIGINS } from '../origin-cases.js';
import { nestedDeeperThan } from '../../src/lib/json.js';
import { routeDefiner } from '../../src/kernel/route.js';
import { Router } from '../../src/kernel/router.js';
import { uuidv7 } from '../../src/lib/ids.js';

const route = routeDefiner<unknown>();
const r = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, operationId: string) => route({ method, path, operationId, summary: '', tag: 't', response: z.null(), handler: () => null });

describe('Router', () => {
  const router = new Router([
    r('GET', '/api/v1/agents/{name}', 'getAgent'),
    r('PATCH', '/api/v1/agents/{name}', 'patchAgent'),
    r('GET', '/api/v1/agents/teams', 'listTeams'),
    r('POST', '/api/v1/agents/teams', 'addTeam'),
    r('DELETE', '/api/v1/vault/entries/{agent}/{service}', 'deleteEntry'),
  ]);
  it.each([
    ['GET', '/api/v1/agents/teams', 'found', 'listTeams', {}],
    ['GET', '/api/v1/agents/alice', 'found', 'getAgent', { name: 'alice' }],
    ['HEAD', '/api/v1/agents/alice', 'found', 'getAgent', { name: 'alice' }],
    ['HEAD', '/api/v1/vault/entries/a/smtp', 'method', undefined, undefined],
    ['GET', '/api/v1/agents/a%20b', 'found', 'getAgent', { name: 'a b' }],
    ['DELETE', '/api/v1/vault/entries/a/smtp', 'found', 'deleteEntry', { agent: 'a', service: 'smtp' }],
    ['DELETE', '/api/v1/agents/alice', 'method', undefined, undefined],
    ['GET', '/api/v1/agents', 'none', undefined, undefined],
    ['GET', '/api/v1/agents/%E0%A4%A', 'none', undefined, undefined],
  ])('%s %s → %s', (method, path, kind, op, params) => {
    const m = router.match(method, path);
    expect(m.kind).toBe(kind);
    if (m.kind === 'found') {
      expect(m.route.operationId).toBe(op);
      expect(m.params).toEqual(params);
    }
  });
  it('lists the allowed methods on a 405', () => {
    expect(router.match('PUT', '/api/v1/agents/teams')).toEqual({ kind: 'method', allow: ['GET', 'HEAD', 'POST'] });
    expect(router.match('HEAD', '/api/v1/vault/entries/a/b')).toEqual({ kind: 'method', allow: ['DELETE'] });
  });
  it('refuses duplicate routes and operationIds', () => {
    expect(() => new Router([r('GET', '/a', 'x'), r('GET', '/a', 'y')])).toThrow(/defined twice/);
    expect(() => new Router([r('GET', '/a', 'x'), r('GET', '/b', 'x')])).toThrow(/operationId/);
  });
});

describe('nestedDeeperThan', () => {
  it.each([
    ['{}', 1, false],
    ['{}', 0, true],
    ['[[1],[2]]', 2, false],
    ['[[[1]]]', 2, true],
    ['{"a":"[[[[[[["}', 1, false],
    ['{"a":"\\"[[[["}', 1, false],
    ['{"a":"\\\\"}', 1, false],
    ['"plain"', 0, false],
    ['['.repeat(5000) + ']'.repeat(5000), 64, true],
    ['[{"x":[{"y":[]}]}]', 5, false],
    ['[{"x":[{"y":[]}]}]', 4, true],
  ] as const)('%s deeper than %i → %s', (text, max, deeper) => {
    expect(nestedDeeperThan(text, max)).toBe(deeper);
  });
});

describe('guards', () => {
  it.each([
    ['localhost:7420', true],
    ['LOCALHOST', true],
    ['app.localhost:1', true],
    ['127.0.0.1', true],
    ['127.8.9.10:80', true],
    ['[::1]:7420', true],
    ['0.0.0.0', false],
    ['localhost.evil.com', false],
    ['10.0.0.1', false],
    ['attacker.com', false],
    ['svc.lan:7420', true],
    [undefined, false],
    // Parsed as host[:port], not searched for a loopback-looking part.
    ['localhost:80@evil.com', false],
    ['localhost@evil.com', false],
    ['evil.com#@localhost', false],
    ['localhost:80:80', false],
    ['localhost:abc', false],
    ['localhost:99999', false],
    ['localhost:', false],
    ['localhost :80', false],
    ['local host', false],
    ['', false],
    [':7420', false],
    ['localhost.', true],
    ['localhost.:7420', true],
    ['localhost..', false],
    ['.localhost', false],
    ['127.0.0.1.', true],
    ['127.1', false],
    ['127.0.0.256', false],
    ['2130706433', false],
    ['[::1]', true],
    ['[0:0:0:0:0:0:0:1]:80', true],
    ['[::ffff:127.0.0.1]:80', true],
    ['[::ffff:10.0.0.1]', false],
    ['[::1', false],
    ['[::1]x', false],
    ['[::1]:80:80', false],
    ['[fe80::1]', false],
    ['[localhost]', false],
    ['svc.lan.', true],
    ['svc.lan:7420@evil.com', false],
    ['\u0000localhost', false],
  ] as const)('Host %j → %s', (host, ok) => {
    expect(hostAllowed(host, ['svc.lan'])).toBe(ok);
  });
  it('matches allowedHosts entries by name (any port) or by name and port', () => {
    expect(hostAllowed('svc.lan:8080', ['svc.lan:7420'])).toBe(false);
    expect(hostAllowed('svc.lan:7420', ['SVC.lan:7420'])).toBe(true);
    expect(hostAllowed('svc.lan', ['svc.lan:7420'])).toBe(false);
    expect(hostAllowed('evil.com', ['not a host', ''])).toBe(false);
  });
  it('matches origins exactly, ignoring a trailing slash and case', () => {
    expect(originAllowed('http://localhost:5173', ['http://localhost:5173/'])).toBe(true);
    expect(originAllowed('HTTP://LOCALHOST:5173', ['http://localhost:5173'])).toBe(true);
    expect(originAllowed('http://localhost:5174', ['http://localhost:5173'])).toBe(false);
    expect(originAllowed('null', [])).toBe(false);
  });
  it.each(FOREIGN_ORIGINS)('refuses an Origin that only resembles the allowed one: %s (%s)', (_n, origin) => {
    expect(originAllowed(origin, [ALLOWED_ORIGIN])).toBe(false);
  });
  it.each(SAME_ORIGINS)('allows the allowed Origin spelled %s (%s)', (_n, origin) => {
    expect(originAllowed(origin, [ALLOWED_ORIGIN])).toBe(true);
  });
  it('never allows the opaque origin null, even when listed: any page can send it', () => {
    expect(originAllowed('null', ['null'])).toBe(false);
    expect(originAllowed('NULL', ['null', ALLOWED_ORIGIN])).toBe(false);
  });
  it('never matches a NUL-cut or padded origin against a longer one', () => {
    expect(originAllowed('http://localhost:5173\u0000.evil.com', [ALLOWED_ORIGIN])).toBe(false);
    expect(originAllowed('http://localhost:5173', ['http://localhost:5173.evil.com'])).toBe(false);
  });
});

describe('authenticate', () => {
  const keys = [
    { name: 'a', digest: sha256('key-a'), source: 'project.json' as const },
    { name: 'b', digest: sha256('key-b'), grants: [{ resource: '*', actions: ['read' as const] }], source: 'project.json' as const },
  ];
  it('finds the matching key and never returns the key itself', () => {
    const p = authenticate(keys, 'key-b');
    expect(p).toMatchObject({ name: 'b', keyId: sha256('key-b').toString('hex'), grants: [{ resource: '*' }] });
    expect(JSON.stringify(p)).not.toContain('key-b"');
  });
  it('refuses a missing or unknown key', () => {
    expect(authenticate(keys, undefined)).toBeNull();
    expect(authenticate(keys, 'key-c')).toBeNull();
    expect(authenticate(keys, '')).toBeNull();
  });
});

describe('migrate', () => {
  const m = [
    { version: 1, name: 'one', sql: 'CREATE TABLE a (x)' },
    { version: 2, name: 'two', sql: 'CREATE TABLE b (y)' },
  ];
  it('applies forward only, once, and records each migration', async () => {
    const db = new Database(':memory:');
    await migrate(new SqliteState(db), m.slice(0, 1));
    await migrate(new SqliteState(db), m);
    await migrate(new SqliteState(db), m);
    expect(db.prepare('SELECT version, name FROM schema_migrations').all()).toEqual([
      { version: 1, name: 'one' },
      { version: 2, name: 'two' },
    ]);
  });
  it('refuses a database written by a newer build', async () => {
    const db = new Database(':memory:');
    await migrate(new SqliteState(db), m);
    await expect((async () => await migrate(new SqliteState(db), m.slice(0, 1)))()).rejects.toThrow(/upgrade svc/);
  });
  it('rolls back a failing migration whole', async () => {
    const db = new Database(':memory:');
    await expect((async () => await migrate(new SqliteState(db), [{ version: 1, name: 'bad', sql: 'CREATE TABLE ok (x); CREATE TABLE ok (x);' }]))()).rejects.toThrow();
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'ok'").get()).toBeUndefined();
  });
});

describe('parseConfig', () => {
  it('fills defaults and names the project after its folder', () => {
    const r = parseConfig('{}', '/tmp/my-proj');
    expect(r).toMatchObject({ ok: true, config: { name: 'my-proj', server: { host: '127.0.0.1', port: 7420, maxBodyBytes: 1_048_576 }, skillsDir: 'skills', webhooks: { timeoutMs: 10_000 } } });
  });
  it('reports each invalid field with its path', () => {
    const r = parseConfig('{"server":{"port":70000,"prot":1},"apiKeys":[{"name":"x"}]}', '/tmp/p');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues.map((i) => i.path).sort()).toEqual(['apiKeys.0', 'server', 'server.port']);
  });
  it('refuses the opaque origin "null" in allowedOrigins, naming the entry', () => {
    const r = parseConfig('{"server":{"allowedOrigins":["http://localhost:5173"," NULL"]}}', '/tmp/p');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues.map((i) => i.path)).toEqual(['server.allowedOrigins.1']);
  });
  it('warns about unknown top-level keys', () => {
    const r = parseConfig('{"extra":1}', '/tmp/p');
    expect(r).toMatchObject({ ok: true, warnings: ['unknown top-level key "extra" is ignored'] });
  });
});

describe('uuidv7', () => {
  it('sorts in creation order, even within one millisecond', () => {
    const ids = Array.from({ length: 1000 }, () => uuidv7(1_700_000_000_000));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
