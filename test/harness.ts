import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { dirname, join } from 'node:path';
import { startDaemon, type Daemon, type DaemonOptions } from '../src/daemon.js';
import { createLogger } from '../src/kernel/log.js';
import { readLocalKey } from '../src/state-dir.js';
import { recordEmitted } from './event-coverage.js';
import { FakeClock } from './fake-clock.js';
import { homeEnv, inTestHome } from './home-guard.js';
import { stateEnv } from './state-pg.js';
import { tempDir } from './temp.js';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface TestDaemon {
  root: string;
  url: string;
  port: number;
  key: string;
  daemon: Daemon;
  logs: string[];
  api<T = any>(method: string, path: string, opts?: { body?: unknown; key?: string | null; headers?: Record<string, string> }): Promise<ApiResponse<T>>;
  /** Rewrites project.json (merged over the test's base config). */
  writeConfig(config: unknown): void;
  close(): Promise<void>;
}

/** A temp project, removed when the test file ends (test/temp.ts). */
export function makeProject(config: Record<string, unknown> = {}, files: Record<string, string> = {}): string {
  const root = tempDir('svc-test-');
  writeFileSync(join(root, 'project.json'), JSON.stringify({ name: 'test-project', ...config }, null, 2));
  for (const [p, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), content);
  }
  return root;
}

/** git in `cwd` with an identity of its own (a test's machine may have none configured); its stdout, trimmed. */
export const git = (cwd: string, ...args: string[]): string => execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], { cwd, encoding: 'utf8' }).trim();

/** A project that is a git repository with one commit (where runs get worktrees); `.svc/` and the tests' user config ignored. */
export function gitProject(config: Record<string, unknown> = {}, files: Record<string, string> = {}): string {
  const root = makeProject(config, { 'README.md': '# test project\n', '.gitignore': '.svc/\n.user-config/\n', ...files });
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'initial');
  return root;
}

/**
 * A test daemon's whole environment (startDaemon's `env` replaces process.env): no OS keychain,
 * the vault's key file in the project, never in the user's ~/.config/svc, and the run's home and
 * XDG dirs (homeEnv, as vitest.config.ts gives every test worker). The agent CLIs a daemon starts
 * inherit it: without a HOME they fell back to the user's real one and ran its shell start-up files
 * (a ~/.bashrc running `pyenv rehash`, whose lock a killed run left behind, made every later Bash
 * tool call wait a minute).
 */
export const daemonEnv = (root: string, more: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const home = process.env.HOME;
  if (home === undefined || !inTestHome(home)) throw new Error(`HOME is not this test run's home (${home}): run the tests with vitest (vitest.config.ts sets it)`);
  return { SVC_KEYCHAIN: 'off', ...homeEnv(home), SVC_CONFIG_DIR: join(root, '.user-config'), ...more };
};

/** The real daemon, in this process, on 127.0.0.1 port 0, in a fresh temp project. */
export async function startTestDaemon(
  opts: {
    config?: Record<string, unknown>;
    env?: Record<string, string>;
    files?: Record<string, string>;
    root?: string;
    keepRoot?: boolean;
    sse?: DaemonOptions['sse'];
    webhooks?: DaemonOptions['webhooks'];
    clock?: DaemonOptions['clock'];
    connections?: DaemonOptions['connections'];
    pruneEveryMs?: DaemonOptions['pruneEveryMs'];
    eventsPollMs?: DaemonOptions['eventsPollMs'];
    /** Off only where a test measures what the daemon itself does with a payload (the check parses it). */
    checkResponses?: boolean;
    /** Log as `svc serve` does, to .svc/logs/daemon.log (at info), instead of to memory at debug; `logs` still gets every line. */
    logFile?: boolean;
  } = {},
): Promise<TestDaemon> {
  const root = opts.root ?? makeProject(opts.config, opts.files);
  const logs: string[] = [];
  const daemon = await startDaemon({
    root,
    host: '127.0.0.1',
    port: 0,
    env: daemonEnv(root, { ...(await stateEnv(root)), ...opts.env }),
    ...(opts.logFile ? { console: (lines: string) => void logs.push(lines) } : { log: createLogger((l) => logs.push(l), 'debug') }),
    checkResponses: opts.checkResponses ?? true,
    sse: opts.sse,
    webhooks: opts.webhooks,
    clock: opts.clock,
    connections: opts.connections,
    pruneEveryMs: opts.pruneEveryMs,
    eventsPollMs: opts.eventsPollMs,
  });
  // A fake clock moves once this daemon's state is quiet: what it arms after a read is armed.
  if (opts.clock instanceof FakeClock) {
    const db = daemon.app.db as unknown as { busy?: boolean };
    opts.clock.waitsFor(async () => {
      // Quiet twice in a row, a turn of the event loop apart: a statement's answer may set off the
      // next. A state never quiet for 2 s (a daemon that polls) is waited for no longer.
      const until = Date.now() + 2_000;
      for (let calm = 0; calm < 2 && Date.now() < until; ) {
        calm = db.busy ? 0 : calm + 1;
        await new Promise((r) => setTimeout(r, db.busy ? 2 : 0));
      }
    });
  }
  // Events emitted before this line (at start) are in the log; later ones are heard live.
  for (const e of await daemon.app.events.since(0, 10_000)) recordEmitted(e.name);
  daemon.app.events.subscribe((e) => recordEmitted(e.name));
  const key = readLocalKey(root)!;
  const url = daemon.url;
  return {
    root,
    url,
    port: daemon.port,
    key,
    daemon,
    logs,
    async api(method, path, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      const k = o.key === undefined ? key : o.key;
      if (k !== null) headers.authorization = `Bearer ${k}`;
      let body: string | undefined;
      if (o.body !== undefined) {
        body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
        headers['content-type'] ??= 'application/json';
      }
      // A GET is sent again once if the server closed the kept-alive connection as it was reused
      // (a loaded machine makes that race likely); anything else is the test's to see.
      const send = () => fetch(url + path, { method, headers, body });
      const res = await send().catch((err: { cause?: { code?: string } }) => {
        if (method === 'GET' && err?.cause?.code === 'ECONNRESET') return send();
        throw err;
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: keep the text
      }
      return { status: res.status, headers: res.headers, body: parsed as any };
    },
    writeConfig(config) {
      writeFileSync(join(root, 'project.json'), typeof config === 'string' ? config : JSON.stringify(config, null, 2));
    },
    async close() {
      await daemon.close();
      if (!opts.keepRoot) rmSync(root, { recursive: true, force: true });
    },
  };
}

/** A request with full control of headers (fetch forbids setting Host). */
export function rawRequest(
  url: string,
  opts: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer; abortStream?: boolean },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, method: opts.method ?? 'GET', path: opts.path ?? '/', headers: opts.headers, setHost: !opts.headers?.host }, (res) => {
      if (opts.abortStream && String(res.headers['content-type']).startsWith('text/event-stream')) {
        // An event stream never ends: its status and headers are the answer.
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
        req.destroy();
        return;
      }
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (data += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

/**
 * Waits for `check` to hold, trying every 20 ms; a check that throws counts as not yet (a page
 * element not there). The error names `what` and the last exception, so a failure says what it waited for.
 */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}${last ? ` (${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * `p` within `ms`, else an error whose first line names `what` (CI prints only that line of a
 * failure) and which ends with the daemon's last log lines: a step that would only run into the
 * test's timeout says where it stopped instead.
 */
export async function within<T>(what: string, p: Promise<T>, ms: number, logs: string[] = []): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms\n${logs.slice(-30).join('\n')}`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 3000, stepMs = 25): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
