import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { authenticate, sha256, type KeyEntry } from '../../src/kernel/auth.js';
import { hasNoBody } from '../../src/kernel/body.js';
import { HostCheck, hostAllowed } from '../../src/kernel/guards.js';
import { createLogger } from '../../src/kernel/log.js';
import { routeDefiner, type AnyRoute } from '../../src/kernel/route.js';
import type { App } from '../../src/app.js';
import { loadApi } from '../../src/routes.js';
import { KernelResponse, writeJsonHead } from '../../src/kernel/response.js';
import { Router } from '../../src/kernel/router.js';
import { queryParams, requestTarget } from '../../src/kernel/target.js';
import { uuidv7 } from '../../src/lib/ids.js';

// What a request no longer pays for (docs/performance.md, "The request pipeline"), each shown to
// give the answer the slower way gave.

describe('requestTarget', () => {
  /** What the steps read before: the WHATWG parser against http://localhost. */
  const byUrl = (raw: string) => {
    try {
      const u = new URL(raw, 'http://localhost');
      return { path: u.pathname, query: u.search.slice(1), params: [...u.searchParams] };
    } catch {
      return null;
    }
  };
  const byTarget = (raw: string) => {
    const t = requestTarget(raw);
    return t && { path: t.path, query: t.query, params: [...queryParams(t.query)] };
  };

  it.each([
    '/',
    '/api/v1/tasks/0193a0c2-4f1b-7000-8000-000000000000',
    '/api/v1/tasks?status=pending&limit=50',
    '/api/v1/tasks?',
    '/a/./b',
    '/a/../b',
    '/a/..',
    '/a/.',
    '/a/%2e%2E/b',
    '/a/.b/c.',
    '//evil.example/x',
    '/a\\b',
    '/a b',
    '/a?x=1#frag',
    "/a?x='1'",
    '/a?x=%zz&y=%41+b',
    '/a?__proto__=1&constructor=2',
    '/a??x=1',
    '/a/ü?q=ü',
    '/a/%00',
    '/a?x=\u0000',
    'http://other.example/p?q=1',
    '*',
    '',
    '/a/[b]/c^d|e',
    "/a/!$&'()*+,;=:@~_-",
  ])('reads %j as the URL parser does', (raw) => {
    expect(byTarget(raw)).toEqual(byUrl(raw));
  });

  it('agrees with the URL parser on random targets', () => {
    const alphabet = '/?#%.\\ab09-_~!$&\'()*+,;=:@[]^|`{}"<> \t\u0000é\u00ff';
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let i = 0; i < 20_000; i++) {
      let raw = '/';
      for (let n = rand(16); n > 0; n--) raw += alphabet[rand(alphabet.length)];
      expect(byTarget(raw), raw).toEqual(byUrl(raw));
    }
  });

  it('skips the parser for a plain path and a plain query', () => {
    const spy = vi.spyOn(globalThis, 'URL');
    try {
      expect(requestTarget('/api/v1/tasks/0193a0c2-4f1b-7000-8000-000000000000')).toEqual({ path: '/api/v1/tasks/0193a0c2-4f1b-7000-8000-000000000000', query: '' });
      expect(requestTarget('/api/v1/tasks?status=done&limit=5')).toEqual({ path: '/api/v1/tasks', query: 'status=done&limit=5' });
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});

describe('Router', () => {
  const route = routeDefiner<unknown>();
  const r = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, operationId: string) => route({ method, path, operationId, summary: '', tag: 't', response: z.null(), handler: () => null });

  it('compares a path only with the templates of its length, and makes no parameters for a template that fails', () => {
    const router = new Router([r('GET', '/a/{x}', 'ax'), r('GET', '/a/{x}/b', 'axb'), r('GET', '/c/{x}/d', 'cxd'), r('POST', '/a/{x}/b', 'postAxb')]);
    expect(router.match('GET', '/a/1/b')).toEqual({ kind: 'found', route: expect.objectContaining({ operationId: 'axb' }), params: { x: '1' } });
    expect(router.match('GET', '/c/1/d')).toMatchObject({ kind: 'found', params: { x: '1' } });
    expect(router.match('PUT', '/a/1/b')).toEqual({ kind: 'method', allow: ['GET', 'HEAD', 'POST'] });
    expect(router.match('GET', '/a/1/b/c')).toEqual({ kind: 'none' });
    expect(router.match('GET', '//a//1/')).toMatchObject({ kind: 'found', params: { x: '1' } });
    expect(router.match('GET', '/a/%E0%A4%A')).toEqual({ kind: 'none' });
    expect(router.errorFormat('GET', '/a/%E0%A4%A')).toBeUndefined();
  });
});

describe('Router on the whole API', () => {
  /** The router as it was: every template, most specific first, compared in turn. */
  function naive(routes: AnyRoute<App>[], method: string, pathname: string) {
    const wanted = method === 'HEAD' ? 'GET' : method;
    let parts: string[];
    try {
      parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
    } catch {
      return { kind: 'none' };
    }
    const ranked = routes
      .map((route) => {
        const segments = route.path.split('/').filter(Boolean);
        return { route, segments, rank: segments.reduce((n, s, i) => n + (s.startsWith('{') ? 0 : 2 ** (segments.length - i)), 0) };
      })
      .sort((a, b) => b.rank - a.rank);
    const allow: string[] = [];
    let best: string | undefined;
    for (const c of ranked) {
      if (c.segments.length !== parts.length || c.segments.some((s, i) => !s.startsWith('{') && s !== parts[i])) continue;
      const params = Object.fromEntries(c.segments.flatMap((s, i) => (s.startsWith('{') ? [[s.slice(1, -1), parts[i]]] : [])));
      if (c.route.method === wanted) return { kind: 'found', operationId: c.route.operationId, params };
      best ??= c.route.path;
      if (c.route.path === best) allow.push(...(c.route.method === 'GET' ? ['GET', 'HEAD'] : [c.route.method]));
    }
    return allow.length ? { kind: 'method', allow } : { kind: 'none' };
  }

  it('matches every path of every template, and its variations, as comparing every template in turn did', async () => {
    const { routes } = await loadApi();
    const router = new Router(routes);
    const paths = new Set<string>(['/', '', '/api', '/api/v1', '/nope/x/y/z']);
    for (const r of routes) {
      const segments = r.path.split('/').filter(Boolean);
      paths.add(`/${segments.map((s) => (s.startsWith('{') ? 'x1' : s)).join('/')}`);
      paths.add(`/${segments.map((s) => (s.startsWith('{') ? 'tasks' : s)).join('/')}`);
      paths.add(`/${segments.map((s, i) => (i === segments.length - 1 ? 'other' : s.startsWith('{') ? 'a%20b' : s)).join('/')}`);
      paths.add(`/${segments.map((s) => (s.startsWith('{') ? 'x' : s)).join('/')}/extra`);
      paths.add(`/${segments.slice(0, -1).join('/')}`);
    }
    for (const path of paths) {
      for (const method of ['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE']) {
        const m = router.match(method, path);
        const got = m.kind === 'found' ? { kind: 'found', operationId: m.route.operationId, params: m.params } : m;
        expect(got, `${method} ${path}`).toEqual(naive(routes, method, path));
      }
    }
  });
});

describe('HostCheck', () => {
  it('answers as hostAllowed does, remembers per list, and stays bounded', () => {
    const check = new HostCheck(2);
    const list = ['svc.example'];
    for (const h of ['localhost:4000', 'svc.example', 'evil.example', '', 'svc.example:1', 'localhost:80@evil.example']) {
      expect(check.allowed(h, list)).toBe(hostAllowed(h, list));
      expect(check.allowed(h, list)).toBe(hostAllowed(h, list));
    }
    expect(check.allowed(undefined, list)).toBe(false);
    // A reload makes a new list: what was remembered for the old one is not used for it.
    expect(check.allowed('svc.example', list)).toBe(true);
    expect(check.allowed('svc.example', [])).toBe(false);
    expect((check as unknown as { seen: Map<string, boolean> }).seen.size).toBeLessThanOrEqual(2);
  });
});

describe('authenticate', () => {
  it('answers the same frozen principal for every request of a key, and a new one once the keys are made again', () => {
    const keys: KeyEntry[] = [{ name: 'a', digest: sha256('key-a-0123456789'), source: 'project.json' }];
    const p1 = authenticate(keys, 'key-a-0123456789')!;
    expect(authenticate(keys, 'key-a-0123456789')).toBe(p1);
    expect(Object.isFrozen(p1)).toBe(true);
    expect(p1).toEqual({ name: 'a', keyId: sha256('key-a-0123456789').toString('hex'), grants: undefined, tools: undefined, source: 'project.json' });
    const reloaded: KeyEntry[] = [{ ...keys[0]!, name: 'renamed' }];
    expect(authenticate(reloaded, 'key-a-0123456789')!.name).toBe('renamed');
  });
});

describe('hasNoBody', () => {
  const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
  it.each([
    [{}, true],
    [{ 'content-length': '0' }, true],
    [{ 'content-length': '00' }, true],
    [{ 'content-length': '2' }, false],
    [{ 'content-length': 'x' }, false],
    [{ 'transfer-encoding': 'chunked' }, false],
    [{ 'content-length': '0', 'transfer-encoding': 'chunked' }, true],
  ])('%j → %s', (headers, none) => {
    expect(hasNoBody(req(headers))).toBe(none);
  });
});

describe('log lines', () => {
  const line = (fields?: unknown) => {
    let out = '';
    createLogger((l) => (out = l)).info('request', fields as Record<string, unknown>);
    return out;
  };
  class WithToJson {
    a = 1;
    toJSON() {
      return { b: 2 };
    }
  }
  it.each([
    ['no fields', undefined],
    ['null', null],
    ['empty', {}],
    ['a request', { id: 'x', method: 'GET', path: '/a"b\\c\n', status: 200, ms: 0.3 }],
    ['undefined values', { a: undefined, b: 1 }],
    ['nested', { a: { b: [1, 'two', null] } }],
    ['its own names', { msg: 'other', time: 1, level: 'x' }],
    ['integer-like names', { b: 1, 2: 'two', 10: 'ten' }],
    ['a large integer-like name', { b: 1, 4294967296: 'x' }],
    ['an array', ['a', 'b']],
    ['a toJSON', new WithToJson()],
    ['a __proto__ member', JSON.parse('{"__proto__":{"x":1},"y":2}')],
    ['no prototype', Object.assign(Object.create(null), { a: 1 })],
  ])('with %s, as JSON.stringify of the spread object', (_name, fields) => {
    const written = line(fields);
    const { time } = JSON.parse(written) as { time: string };
    expect(written).toBe(JSON.stringify({ time, level: 'info', msg: 'request', ...(fields as object) }) + '\n');
  });

  it("writes a request's line as info('request', fields) does, whatever its path, method and numbers", () => {
    const both = (id: string, method: string, path: string, status: number, ms: number) => {
      const out: string[] = [];
      const log = createLogger((l) => out.push(l));
      log.request!(id, method, path, status, ms);
      log.info('request', { id, method, path, status, ms });
      // The time may have moved on between the two lines.
      return out.map((l) => l.replace(/^\{"time":"[^"]*"/, ''));
    };
    const odd = ['', '/a"b', '/a\\b', '/\n\t\u0000', '/é/日本', '/\u2028\u2029', '/\ud800x', '/\u007f', '/%22', "/'", '/<>{}|^`'];
    const random = Array.from({ length: 300 }, () => String.fromCharCode(...Array.from({ length: 1 + Math.floor(Math.random() * 12) }, () => Math.floor(Math.random() * 0x3000))));
    for (const path of [...odd, ...random]) {
      const [fast, slow] = both('01a21c8d-dad8-7000-8e70-719288e69dbe', 'GET', path, 200, 0.3);
      expect(fast).toBe(slow);
    }
    for (const [method, status, ms] of [
      ['M"X', 499, Number.NaN],
      ['DELETE', 0, Number.POSITIVE_INFINITY],
      ['GET', 200, 12345.6],
      ['GET', 200, -0],
      ['GET', 200, 1e21],
    ] as const) {
      const [fast, slow] = both('x', method, '/p', status, ms);
      expect(fast).toBe(slow);
    }
    // Below info, neither is written.
    const out: string[] = [];
    createLogger((l) => out.push(l), 'warn').request!('x', 'GET', '/', 200, 1);
    expect(out).toEqual([]);
  });
});

describe('uuidv7', () => {
  it('writes the time, version, counter and variant where they go, and random bits after', () => {
    const at = 0x0193a0c24f1b;
    const ids = Array.from({ length: 600 }, () => uuidv7(at));
    for (const [i, id] of ids.entries()) {
      expect(id).toMatch(/^0193a0c2-4f1b-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      if (i > 0) expect(parseInt(id.slice(15, 18), 16)).toBe(parseInt(ids[i - 1]!.slice(15, 18), 16) + 1);
    }
    expect(new Set(ids.map((id) => id.slice(19))).size).toBe(ids.length);
    // Past 4,096 ids in one millisecond the time moves on by one.
    const many = Array.from({ length: 5000 }, () => uuidv7(at + 10));
    expect(many.at(-1)!.slice(0, 13)).toBe('0193a0c2-4f26');
    expect([...many].sort()).toEqual(many);
  });
});

describe('KernelResponse', () => {
  /** The raw head a handler's response went out with. */
  async function head(handler: (res: KernelResponse) => void): Promise<string> {
    const server = createServer<typeof IncomingMessage, typeof KernelResponse>({ ServerResponse: KernelResponse }, (_req, res) => {
      res.requestId = 'the-id';
      handler(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (server.address() as AddressInfo).port;
      return await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'));
        let text = '';
        socket.on('data', (c) => (text += c));
        socket.on('end', () => resolve(text.split('\r\n\r\n')[0]!));
        socket.on('error', reject);
      });
    } finally {
      server.close();
    }
  }
  const names = (h: string) =>
    h
      .split('\r\n')
      .slice(1)
      .map((l) => l.slice(0, l.indexOf(':')));

  it('writes X-Request-Id first, whoever writes the head and however', async () => {
    expect(names(await head((res) => (writeJsonHead(res, 200, { 'X-Next-Cursor': 'c' }, 2), res.end('{}'))))).toEqual([
      'X-Request-Id',
      'X-Next-Cursor',
      'Content-Type',
      'Content-Length',
      'Date',
      'Connection',
    ]);
    expect(names(await head((res) => res.writeHead(201, { 'Content-Type': 'text/plain' }).end('ok')))).toEqual(['X-Request-Id', 'Content-Type', 'Date', 'Connection', 'Transfer-Encoding']);
    expect(names(await head((res) => res.setHeader('Vary', 'Origin').end('ok')))).toEqual(['X-Request-Id', 'Vary', 'Date', 'Connection', 'Content-Length']);
    expect(names(await head((res) => res.end()))).toEqual(['X-Request-Id', 'Date', 'Connection', 'Content-Length']);
    // A header set before the kernel writes its own head keeps X-Request-Id first all the same.
    expect(names(await head((res) => (writeJsonHead(res.setHeader('Access-Control-Allow-Origin', 'x'), 200, {}, 2), res.end('{}'))))).toEqual([
      'X-Request-Id',
      'Access-Control-Allow-Origin',
      'Content-Type',
      'Content-Length',
      'Date',
      'Connection',
    ]);
    expect(await head((res) => res.end())).toContain('X-Request-Id: the-id');
  });
});
