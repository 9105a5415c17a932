import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserCommand } from '../src/resources/board/command.js';
import { BOARD_CSP } from '../src/resources/board/routes.js';
import { svcAgainst } from './cli-helpers.js';
import { FakeClock } from './fake-clock.js';
import { rawRequest, startTestDaemon, until, type TestDaemon } from './harness.js';

// Signing in to the board over plain HTTP: the one-time login link, the session cookie it is
// exchanged for (CSRF, Origin, read-only, revocation, the key's removal) and `svc open`. Sessions
// live in the state, so this file also runs with the state on PostgreSQL (vitest.config.ts); the
// board in a browser is test/board.test.ts.

let d: TestDaemon;

/**
 * Mints a login link (with the test key, or `key`, on `daemon`, default this file's) and exchanges
 * it over plain HTTP: the session cookie, the token the redirect's fragment hands the page, and
 * whether the minted link was read-only.
 */
async function login(opts: { daemon?: TestDaemon; readOnly?: boolean; key?: string } = {}): Promise<{ cookie: string; csrf: string; setCookie: string; readOnly: boolean }> {
  const on = opts.daemon ?? d;
  const minted = await on.api('POST', '/api/v1/board/logins', { body: opts.readOnly ? { readOnly: true } : {}, ...(opts.key ? { key: opts.key } : {}) });
  expect(minted.status).toBe(201);
  const res = await rawRequest(on.url, { path: minted.body.data.path });
  expect(res.status).toBe(303);
  const setCookie = String(res.headers['set-cookie']);
  const csrf = /^\/#csrf=([\w-]{43})$/.exec(String(res.headers.location))![1]!;
  return { cookie: setCookie.split(';')[0]!, csrf, setCookie, readOnly: minted.body.data.readOnly };
}

/** A request of a session as the board makes it: its cookie and its token (headers may override or drop the token). */
const asBoard = (method: string, path: string, s: { cookie: string; csrf: string }, headers: Record<string, string> = {}, body?: unknown) =>
  withCookie(method, path, s.cookie, { 'x-csrf-token': s.csrf, ...headers }, body);

async function withCookie(method: string, path: string, cookie: string, headers: Record<string, string> = {}, body?: unknown) {
  const res = await rawRequest(d.url, {
    method,
    path,
    headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: res.body ? (JSON.parse(res.body) as any) : null, headers: res.headers };
}

beforeAll(async () => {
  d = await startTestDaemon({ config: { apiKeys: [{ name: 'reader', key: 'r'.repeat(32), tools: 'read' }] } });
});
afterAll(async () => {
  await d?.close();
});

describe('signing in with a one-time link', () => {
  it('exchanges a link once for an HttpOnly, SameSite=Strict session cookie and drops the token from the URL', async () => {
    const minted = await d.api('POST', '/api/v1/board/logins', { body: {} });
    // A HEAD (a link preview) does not spend the link.
    const head = await rawRequest(d.url, { method: 'HEAD', path: minted.body.data.path });
    expect(head.status).toBe(303);
    expect(head.headers['set-cookie']).toBeUndefined();
    expect(minted.body.data).toMatchObject({ path: expect.stringMatching(/^\/login\?token=[\w-]{43}$/), readOnly: false });
    const res = await rawRequest(d.url, { path: minted.body.data.path });
    expect(res.status).toBe(303);
    // The CSRF token is handed to the page in the fragment (never sent to a server), not in a cookie.
    expect(res.headers.location).toMatch(/^\/#csrf=[\w-]{43}$/);
    expect(res.headers['cache-control']).toBe('no-store');
    const cookies = ([] as string[]).concat(res.headers['set-cookie'] as string | string[]);
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatch(new RegExp(`^svc_session_${d.port}=[\\w-]+; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict$`));

    // The same link again is refused with a page that says why.
    const reused = await rawRequest(d.url, { path: minted.body.data.path });
    expect(reused.status).toBe(401);
    expect(reused.headers['set-cookie']).toBeUndefined();
    expect(reused.body).toContain('This login link was already used');
    expect(reused.headers['content-security-policy']).toBe(BOARD_CSP);
    const unknown = await rawRequest(d.url, { path: '/login?token=' + 'x'.repeat(43) });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toContain('not valid');
  });

  it('refuses an expired link (the clock seam moves past its 60 s)', async () => {
    const clock = new FakeClock(Date.now());
    const e = await startTestDaemon({ clock });
    try {
      const minted = await e.api('POST', '/api/v1/board/logins', { body: {} });
      await clock.pass(59_000);
      const fresh = await e.api('POST', '/api/v1/board/logins', { body: {} });
      expect((await rawRequest(e.url, { path: fresh.body.data.path })).status).toBe(303);
      await clock.pass(2_000);
      const late = await rawRequest(e.url, { path: minted.body.data.path });
      expect(late.status).toBe(401);
      expect(late.body).toContain('This login link has expired');
    } finally {
      await e.close();
    }
  });

  it('ends a session at its 12 h, and the event stream it opened with it', async () => {
    const clock = new FakeClock(Date.now());
    const e = await startTestDaemon({ clock, sse: { heartbeatMs: 50 } });
    try {
      const s = await login({ daemon: e });
      const headers = { cookie: s.cookie, 'x-csrf-token': s.csrf };
      const stream = await fetch(`${e.url}/v1/events`, { headers });
      expect(stream.status).toBe(200);
      const ended = (async () => {
        const reader = stream.body!.getReader();
        while (!(await reader.read()).done);
        return true;
      })();
      await clock.pass(12 * 3_600_000 - 1_000);
      expect((await fetch(`${e.url}/api/v1/tasks`, { headers })).status).toBe(200);
      expect(e.daemon.app.streams.size).toBe(1);
      await clock.pass(2_000);
      expect((await fetch(`${e.url}/api/v1/tasks`, { headers })).status).toBe(401);
      expect(await ended).toBe(true);
      expect(e.daemon.app.streams.size).toBe(0);
    } finally {
      await e.close();
    }
  });

  it('lets a session read and change state only with its CSRF token, from its own origin', async () => {
    const s = await login();
    expect((await asBoard('GET', '/api/v1/board/session', s)).body.data).toEqual({ name: 'local', session: true, readOnly: false, lastEventId: await d.daemon.app.events.lastId() });
    expect((await asBoard('GET', '/api/v1/tasks', s)).status).toBe(200);
    // The cookie alone is refused, reads included: a browser sends it to a server on any port of
    // this host, and that server must not be able to use it.
    const cookieOnly = await withCookie('GET', '/api/v1/tasks', s.cookie);
    expect(cookieOnly.status).toBe(403);
    expect(cookieOnly.body.error).toContain('X-CSRF-Token');
    expect((await fetch(`${d.url}/v1/events`, { headers: { cookie: s.cookie } })).status).toBe(403);

    const noCsrf = await withCookie('POST', '/api/v1/tasks', s.cookie, {}, { title: 'no token' });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.error).toContain('X-CSRF-Token');
    const wrong = await asBoard('POST', '/api/v1/tasks', s, { 'x-csrf-token': s.csrf.slice(0, -2) + 'AA' }, { title: 'wrong token' });
    expect(wrong.status).toBe(403);
    // Another session's token does not fit this one: it is bound to the session.
    const other = await login();
    expect((await asBoard('POST', '/api/v1/tasks', s, { 'x-csrf-token': other.csrf }, { title: 'foreign token' })).status).toBe(403);
    expect((await withCookie('DELETE', '/api/v1/board/sessions', s.cookie)).status).toBe(403);
    // A session cannot mint its own next login link (it would never expire).
    const again = await asBoard('POST', '/api/v1/board/logins', s, { origin: d.url }, {});
    expect(again.status).toBe(403);
    expect(again.body.error).toContain('svc open');

    const ok = await withCookie('POST', '/api/v1/tasks', s.cookie, { 'x-csrf-token': s.csrf, origin: d.url }, { title: 'with token' });
    expect(ok.status).toBe(201);
    // A page of another origin is refused even with the cookie and the token.
    const cross = await withCookie('POST', '/api/v1/tasks', s.cookie, { 'x-csrf-token': s.csrf, origin: 'http://evil.example' }, { title: 'cross' });
    expect(cross.status).toBe(403);
    expect(cross.body.error).toContain('Origin not allowed');
    // A rebinding page (foreign Host) is refused before anything else.
    expect((await asBoard('GET', '/api/v1/tasks', s, { host: 'evil.example' })).status).toBe(403);
    // No cookie, no access; a session cookie never rides along with a wrong bearer key.
    expect((await withCookie('GET', '/api/v1/tasks', '')).status).toBe(401);
    expect((await asBoard('GET', '/api/v1/tasks', s, { authorization: 'Bearer nope-nope-nope-nope' })).status).toBe(401);
    // Keys never go in a URL: a key in the query string is refused, not read.
    expect((await rawRequest(d.url, { path: `/api/v1/tasks?apiKey=${d.key}` })).status).not.toBe(200);
  });

  it('makes read-only sessions for a read-only link or a tools:"read" key, and enforces them', async () => {
    const ro = await login({ readOnly: true });
    expect((await asBoard('GET', '/api/v1/board/session', ro)).body.data).toMatchObject({ readOnly: true, session: true });
    const refused = await asBoard('POST', '/api/v1/tasks', ro, {}, { title: 'read-only' });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toContain('read-only');

    const reader = await login({ key: 'r'.repeat(32) });
    expect(reader.readOnly).toBe(true);
    expect((await asBoard('GET', '/api/v1/board/session', reader)).body.data).toEqual({ name: 'reader', session: true, readOnly: true, lastEventId: await d.daemon.app.events.lastId() });
    // A session lives only as long as its key: removed from project.json, the session ends.
    d.writeConfig({ name: 'test-project', apiKeys: [] });
    await until('the session to end with its key', async () => (await asBoard('GET', '/api/v1/tasks', reader)).status === 401);
    d.writeConfig({ name: 'test-project', apiKeys: [{ name: 'reader', key: 'r'.repeat(32), tools: 'read' }] });
  });

  it('svc open --logout-all signs every session out and closes their event streams', async () => {
    const s = await login();
    const ctrl = new AbortController();
    const stream = await fetch(`${d.url}/v1/events`, { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf }, signal: ctrl.signal });
    expect(stream.status).toBe(200);
    const ended = (async () => {
      const reader = stream.body!.getReader();
      while (!(await reader.read()).done);
      return true;
    })();
    const out = await svcAgainst(d, ['open', '--logout-all', '--json']);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout).revoked).toBeGreaterThanOrEqual(1);
    expect(await ended).toBe(true);
    expect((await asBoard('GET', '/api/v1/tasks', s)).status).toBe(401);
    ctrl.abort();
  });

  it('svc open prints the link when it cannot open a browser', async () => {
    const out = await svcAgainst(d, ['open', '--no-browser', '--json']);
    expect(out.code).toBe(0);
    const j = JSON.parse(out.stdout);
    expect(j).toMatchObject({ url: expect.stringMatching(new RegExp(`^${d.url}/login\\?token=`)), opened: false, readOnly: false });
    const human = await svcAgainst(d, ['open'], { env: { DISPLAY: '', WAYLAND_DISPLAY: '', SSH_CONNECTION: '1.2.3.4 5 6.7.8.9 22' } });
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('this is an SSH session');
    expect(human.stdout).toMatch(/\/login\?token=[\w-]{43}\n$/);
    expect(browserCommand({ DISPLAY: ':0' }, 'linux')).toEqual({ cmd: 'xdg-open', args: [] });
    expect(browserCommand({}, 'linux')).toMatchObject({ why: expect.stringContaining('no display') });
    expect(browserCommand({}, 'darwin')).toEqual({ cmd: 'open', args: [] });
  });
});
