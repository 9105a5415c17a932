import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { ProjectConfigSchema } from '../src/config/schema.js';
import { startDaemon, type Daemon } from '../src/daemon.js';
import { createLogger } from '../src/kernel/log.js';
import { readDaemonInfo } from '../src/state-dir.js';
import { svc } from './cli-helpers.js';
import { daemonEnv, eventually, makeProject, rawRequest, startTestDaemon, type TestDaemon } from './harness.js';

// Issue 21 item 4: a non-loopback host only with TLS or a declared proxy (and allowedHosts); the
// served certificate follows its files without a restart; X-Forwarded-For only from the proxy.

const hasOpenssl = spawnSync('openssl', ['version']).status === 0;

/** A self-signed P-256 certificate for localhost and 127.0.0.1, written to dir/<name>-{cert,key}.pem. */
function makeCert(dir: string, name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}-cert.pem`);
  const key = join(dir, `${name}-key.pem`);
  const r = spawnSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr}`);
  return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
}

/** GETs path over HTTPS trusting `ca`; resolves with the status and the served certificate's fingerprint. */
function httpsGet(url: string, path: string, ca: string | string[]): Promise<{ status: number; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url + path, { ca, agent: false }, (res) => {
      const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, fingerprint }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('listening beyond loopback', () => {
  it('refuses 0.0.0.0 without tls or trustedProxy, naming the fix, in the loader and at start', async () => {
    const root = makeProject({ server: { host: '0.0.0.0', port: 0 } });
    const loaded = loadConfig(root);
    expect(loaded.ok).toBe(false);
    const issues = loaded.ok ? [] : loaded.issues;
    expect(issues.map((i) => i.path)).toEqual(['server.host', 'server.allowedHosts']);
    expect(issues[0]!.message).toMatch(/server\.tls.*server\.trustedProxy/);
    await expect(startDaemon({ root, port: 0, env: daemonEnv(root), log: createLogger(() => undefined) })).rejects.toThrow(/server\.tls \{cert, key\}/);
    // --host is held to the same rule as project.json's host.
    const loopback = makeProject({});
    await expect(startDaemon({ root: loopback, host: '0.0.0.0', port: 0, env: daemonEnv(loopback), log: createLogger(() => undefined) })).rejects.toThrow(
      /refusing to listen on 0\.0\.0\.0: .*server\.trustedProxy.*server\.allowedHosts/,
    );
    // Declared proxy and allowedHosts: valid.
    expect(loadConfig(makeProject({ server: { host: '0.0.0.0', trustedProxy: ['10.0.0.0/8'], allowedHosts: ['svc.example.com'] } })).ok).toBe(true);
  });

  it('a reload to a non-loopback host without tls is refused and the last good config stays', async () => {
    const d = await startTestDaemon({});
    try {
      d.writeConfig({ name: 'test-project', server: { host: '0.0.0.0' } });
      await eventually(() => d.logs.some((l) => l.includes('change refused')), 2000);
      const line = JSON.parse(d.logs.find((l) => l.includes('change refused'))!);
      expect(line.issues.map((i: { path: string }) => i.path)).toEqual(['server.host', 'server.allowedHosts']);
      expect((await d.api('GET', '/api/v1/status')).status).toBe(200);
    } finally {
      await d.close();
    }
  });
});

describe.skipIf(!hasOpenssl)('server.tls (self-signed certificates made with openssl)', () => {
  let root: string;
  let daemon: Daemon;
  let first: { cert: string; key: string };
  let second: { cert: string; key: string };
  const logs: string[] = [];
  const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

  beforeAll(async () => {
    root = makeProject({ server: { host: '0.0.0.0', port: 0, allowedHosts: ['svc.example.com'], tls: { cert: 'tls/cert.pem', key: 'tls/key.pem' } } });
    const dir = join(root, 'tls');
    mkdirSync(dir);
    first = makeCert(dir, 'first');
    second = makeCert(dir, 'second');
    writeFileSync(join(dir, 'cert.pem'), first.cert);
    writeFileSync(join(dir, 'key.pem'), first.key);
    // A short head deadline, so that the keep-alive test below sees it pass.
    daemon = await startDaemon({ root, port: 0, env: daemonEnv(root), log: createLogger((l) => logs.push(l), 'debug'), checkResponses: true, connections: { headersTimeoutMs: 500 } });
  });
  afterAll(async () => {
    await daemon?.close();
  });

  it('serves HTTPS on 0.0.0.0 with the certificate; plain HTTP gets no answer; daemon.json points clients at it', async () => {
    expect(daemon.url).toBe(`https://127.0.0.1:${daemon.port}`);
    const r = await httpsGet(daemon.url, '/healthz', first.cert);
    expect(r.status).toBe(200);
    expect(r.fingerprint).toBe(fingerprint(first.cert));
    await expect(rawRequest(`http://127.0.0.1:${daemon.port}`, { path: '/healthz' })).rejects.toThrow();
    // Without the certificate as CA, a self-signed daemon is not trusted.
    await expect(
      new Promise((res, rej) =>
        httpsRequest(daemon.url + '/healthz', { agent: false }, res)
          .on('error', rej)
          .end(),
      ),
    ).rejects.toThrow(/self.signed/);
    const info = readDaemonInfo(root)!;
    expect(info.url).toBe(daemon.url);
    expect(info.ca).toBe(join(root, 'tls', 'cert.pem'));
  });

  it('the CLI reaches its own TLS daemon, trusting the configured certificate', async () => {
    const r = await svc(['--json', 'status'], { cwd: root });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ port: daemon.port, pid: process.pid });
    const tasks = await svc(['--json', 'tasks', 'ls'], { cwd: root });
    expect(tasks.code, tasks.stderr).toBe(0);
  });

  it('a replaced certificate is served without a restart; a broken replacement keeps the one in force', async () => {
    const dir = join(root, 'tls');
    // As a renewal script does: new files written aside, then renamed over the old ones.
    writeFileSync(join(dir, 'key.pem.new'), second.key);
    writeFileSync(join(dir, 'cert.pem.new'), second.cert);
    renameSync(join(dir, 'key.pem.new'), join(dir, 'key.pem'));
    renameSync(join(dir, 'cert.pem.new'), join(dir, 'cert.pem'));
    const both = [first.cert, second.cert];
    await eventually(async () => (await httpsGet(daemon.url, '/healthz', both)).fingerprint === fingerprint(second.cert), 3000);
    expect(logs.some((l) => l.includes('TLS certificate reloaded'))).toBe(true);

    // A key that is not the certificate's: refused, the second pair stays.
    writeFileSync(join(dir, 'key.pem'), first.key);
    await eventually(() => logs.some((l) => l.includes('TLS certificate change refused')), 3000);
    expect((await httpsGet(daemon.url, '/healthz', both)).fingerprint).toBe(fingerprint(second.cert));
    writeFileSync(join(dir, 'cert.pem'), 'not a certificate');
    await eventually(() => logs.filter((l) => l.includes('TLS certificate change refused')).length >= 2, 3000);
    const r = await httpsGet(daemon.url, '/healthz', both);
    expect(r).toEqual({ status: 200, fingerprint: fingerprint(second.cert) });
  });

  it('a kept-alive TLS connection outlives the head deadline (the connection guard sees its requests)', async () => {
    const agent = new (await import('node:https')).Agent({ keepAlive: true, ca: [first.cert, second.cert] });
    try {
      const get = () =>
        new Promise<boolean>((resolve, reject) => {
          const req = httpsRequest(daemon.url + '/healthz', { agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(req.reusedSocket));
          });
          req.on('error', reject);
          req.end();
        });
      expect(await get()).toBe(false);
      await new Promise((r) => setTimeout(r, 800));
      expect(await get()).toBe(true);
    } finally {
      agent.destroy();
    }
  });

  it('the Host guard still applies over TLS: allowedHosts names are served, others refused', async () => {
    const get = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpsRequest(daemon.url + '/healthz', { ca: [first.cert, second.cert], agent: false, servername: 'localhost', headers: { host } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    expect(await get('svc.example.com')).toBe(200);
    expect(await get('evil.example.com')).toBe(403);
  });
});

describe('server.trustedProxy', () => {
  let d: TestDaemon;
  afterAll(async () => d?.close());

  const clientLogged = async (xff: string): Promise<unknown> => {
    d.logs.length = 0;
    const r = await rawRequest(d.url, { path: '/healthz', headers: { 'x-forwarded-for': xff } });
    expect(r.status).toBe(200);
    await eventually(() => d.logs.some((l) => l.includes('"msg":"request"')), 1000);
    return JSON.parse(d.logs.find((l) => l.includes('"msg":"request"'))!).client;
  };

  it('X-Forwarded-For is believed only from the declared proxy, for the log and the failure limiter', async () => {
    d = await startTestDaemon({ config: { server: { trustedProxy: ['127.0.0.1'] } } });
    // From the proxy: the nearest address it forwarded that is not itself the proxy.
    expect(await clientLogged('203.0.113.7')).toBe('203.0.113.7');
    expect(await clientLogged('198.51.100.1, 203.0.113.7, 127.0.0.1')).toBe('203.0.113.7');
    expect(await clientLogged('not-an-address')).toBe('127.0.0.1');

    // The limiter charges the forwarded client: one client's 20 failures do not lock out another.
    const fail = (xff: string) => rawRequest(d.url, { path: '/api/v1/status', headers: { 'x-forwarded-for': xff, authorization: 'Bearer wrong-key-0123456789' } });
    for (let i = 0; i < 20; i++) expect((await fail('203.0.113.9')).status).toBe(401);
    expect((await fail('203.0.113.9')).status).toBe(429);
    expect((await fail('203.0.113.10')).status).toBe(401);

    // A proxy that is not the peer: the header is ignored, the peer is the client.
    const before = JSON.parse(readFileSync(join(d.root, 'project.json'), 'utf8'));
    d.writeConfig({ ...before, server: { trustedProxy: ['10.0.0.1'] } });
    await eventually(() => d.logs.some((l) => l.includes('project.json reloaded')), 2000);
    expect(await clientLogged('203.0.113.7')).toBe('127.0.0.1');
    for (let i = 0; i < 20; i++) await fail(`192.0.2.${i}`);
    expect((await fail('192.0.2.200')).status).toBe(429);
  });

  it('without trustedProxy the request line is as before (no client field)', async () => {
    const plain = await startTestDaemon({});
    try {
      plain.logs.length = 0;
      await rawRequest(plain.url, { path: '/healthz', headers: { 'x-forwarded-for': '203.0.113.7' } });
      await eventually(() => plain.logs.some((l) => l.includes('"msg":"request"')), 1000);
      expect(JSON.parse(plain.logs.find((l) => l.includes('"msg":"request"'))!)).not.toHaveProperty('client');
    } finally {
      await plain.close();
    }
  });
});

describe('docs/deploy.md', () => {
  it('every project.json of the three-machine layout is valid as pasted', () => {
    const md = readFileSync(new URL('../docs/deploy.md', import.meta.url), 'utf8');
    const blocks = [...md.matchAll(/```json\n([\s\S]*?)\n```/g)].map((m) => JSON.parse(m[1]!));
    // The state snippet, the one-machine recipe's project.json, and the one the three machines share.
    expect(blocks.length).toBe(3);
    for (const b of blocks) expect(ProjectConfigSchema.safeParse({ name: 'snippet', ...b }).error?.issues ?? []).toEqual([]);
    const layout = blocks.filter((b) => b.server);
    expect(layout).toHaveLength(1);
    expect(layout[0]).toMatchObject({ state: { provider: 'postgres' } });
    // Without the proxy declared, the same file is refused.
    const { trustedProxy: _, ...server } = layout[0].server;
    expect(ProjectConfigSchema.safeParse({ ...layout[0], server }).success).toBe(false);
  });
});
