import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readDaemonInfo, readLocalKey } from '../src/state-dir.js';
import { verifyWebhook } from '../src/resources/webhooks/verify.js';
import { SVC } from './cli-helpers.js';
import { startReceiver, type Receiver } from './webhook-receiver.js';
import { pidAlive } from '../src/lib/proc.js';
import { tempDir } from './temp.js';

// The README's quick start, followed command by command on a fresh temp project: the ```sh blocks
// of "Use the CLI" and "Call the API" are read from README.md itself (not copied here), so a README
// edit that no longer works fails this test. Each command runs as a reader would paste it: through
// bash, in the project folder, with `svc` on the PATH (the built bin/svc) and curl for the API
// block. The order is the CLI block up to its final `svc stop`, then the API block (its curls need
// the daemon the CLI block started, and after `svc restart` they check it kept its address), then
// `svc stop`.
//
// Rewrites, all of them here, nothing else is changed in a command:
// - `svc serve` without --port gets `--port 0`, as the README says to do when 7420 is taken (a
//   test must not depend on 7420 being free); `127.0.0.1:7420` in a URL becomes the port the
//   daemon took (from .svc/daemon.json, where the CLI finds it too). The webhook receiver the README
//   names, `http://127.0.0.1:4000/`, is one this test runs on a free port (so no process of the
//   machine that happens to hold 4000 gets deliveries); it checks what arrives with the secret
//   `svc webhooks add` printed.
// - Ids. The README shows example ids (`61e1`, `61e1b882`, `c6f7`): words of 4 to 8 hex digits
//   with at least one digit and one letter. Such a word stands for the task, mission or approval
//   the quick start made most recently when its first 4 characters first appear (UUID v7 ids are
//   time-ordered, so that is the greatest id of the three lists); later words with the same first
//   4 characters stand for the same one, and must be its prefixes (one example id, shortened). Each
//   becomes as many characters of the real short id (the last 8 characters of the id, what tables
//   show), so `61e1` tests a 4-character short id and `61e1b882` the full one.
// - A command whose comment says `--yes` is "required without one" (a terminal) exits 2 here, as
//   written (the README's "destructive command without confirmation"); it is then run again with
//   --yes, which must exit 0.
//
// What a command must do: exit 0 (unless the rule above applies); a comment that is one quoted
// string ("approved …; task 61e1b882 is now assigned") is what it prints, `…` or `...` standing for
// anything; in the API block, a `# …` line right below a command is its output the same way, and
// each answer is an `{"ok":true}` envelope when it is one. CHECKS adds what some comments promise.
//
// Not run here: the README's first block (npm install / start / test: installing and testing this
// repository itself), and the shell completion block, which test/config-docs.test.ts runs in a
// fresh home; that file also starts a daemon on the README's project.json example as pasted.

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The first ```sh block after the heading `## <title>`. */
function shBlock(title: string): string {
  const from = readme.indexOf(`\n## ${title}\n`);
  expect(from, `README section "## ${title}"`).toBeGreaterThanOrEqual(0);
  const m = /```sh\n([\s\S]*?)\n```/.exec(readme.slice(from));
  expect(m, `a \`\`\`sh block in "## ${title}"`).not.toBeNull();
  return m![1]!;
}

interface Step {
  /** The command as the README writes it, continuation lines joined, without its comment. */
  text: string;
  /** Its trailing `# …` comment, without the `#`. */
  comment: string;
  /** A `# …` line right below it in the API block: what it prints. */
  output?: string;
}

/** Splits a shell line at its comment: a `#` after whitespace, outside quotes. */
function splitComment(line: string): [string, string] {
  let quote = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return [line.slice(0, i).trim(), line.slice(i + 1).trim()];
  }
  return [line.trim(), ''];
}

function stepsOf(block: string): Step[] {
  const steps: Step[] = [];
  for (const line of block.replace(/\s*\\\n\s*/g, ' ').split('\n')) {
    if (!line.trim()) continue;
    const [text, comment] = splitComment(line);
    if (text) steps.push({ text, comment });
    else if (steps.length && steps.at(-1)!.output === undefined) steps.at(-1)!.output = comment;
  }
  return steps;
}

/** A shell line's words, quotes removed (enough for the README's commands). */
const words = (text: string): string[] => [...text.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);

/** An example id of the README: 4-8 hex digits, at least one digit and one letter. */
const EXAMPLE_ID = /\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{4,8}\b/g;

/** A README output text as a pattern: `…` and `...` stand for anything. */
const outputPattern = (text: string) =>
  new RegExp(
    text
      .split(/…|\.\.\./)
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[\\s\\S]*?'),
  );

/**
 * Commands that run until Ctrl-C: each is started, left until it shows it works (`ready`), then
 * sent SIGINT as a terminal's Ctrl-C would (to its process group), and must exit 0. Keyed by the
 * command as the README writes it; a key the README no longer has fails the test.
 */
const STREAMING: Record<string, { why: string; ready: (p: Streaming, s: Session) => Promise<void>; after?: (p: Streaming, s: Session) => Promise<void> | void }> = {
  'svc serve': {
    why: 'the daemon in the foreground, until Ctrl-C',
    ready: (p) => p.until(() => /"msg":"listening"/.test(p.stdout()), 'its listening line'),
    // Ctrl-C shuts down gracefully, removing .svc/daemon.json.
    after: (_p, s) => expect(existsSync(join(s.root, '.svc', 'daemon.json'))).toBe(false),
  },
  'svc events tail --filter task:': {
    why: 'a live stream, until Ctrl-C',
    // An event made before the stream is open is not in it: tasks are added (through the API, not
    // the README) until the tail prints one.
    ready: async (p, s) => {
      for (let i = 0; ; i++) {
        await s.api('POST', '/api/v1/tasks', { title: `tail probe ${i}` });
        try {
          return await p.until(() => p.stdout().includes('task:created'), 'a task:created line', 300);
        } catch (e) {
          if (i === 30) throw e;
        }
      }
    },
  },
  'svc webhooks listen': {
    why: 'a local receiver, until Ctrl-C',
    // Its webhook is registered before it says it is ready; a task added then is delivered to it.
    ready: async (p, s) => {
      await p.until(() => p.stderr().includes('Ready.'), '"Ready."');
      await s.api('POST', '/api/v1/tasks', { title: 'listen probe' });
      await p.until(() => p.stdout().includes('task:created'), 'a verified task:created delivery');
    },
    after: async (p, s) => {
      expect(p.stderr()).toContain('Removed webhook');
      // The task went to the webhook `svc webhooks add` made too, signed with the secret it printed.
      await s.receiver.waitFor(1);
      const got = s.receiver.received.find((d) => d.headers['x-service-event'] === 'task:created');
      expect(got, 'a task:created delivery to the webhook of `svc webhooks add`').toBeDefined();
      expect(verifyWebhook(got!.body, got!.headers['x-service-signature'] as string, s.webhookSecret!)).toBe(true);
    },
  },
  'svc logs -f': {
    why: 'follows the log, until Ctrl-C',
    // The log so far, then a line written after it started: it is following (and has its Ctrl-C
    // handler, set once the log so far is printed).
    ready: async (p, s) => {
      await p.until(() => /listening on http:\/\/127\.0\.0\.1:\d+/.test(p.stdout()), 'the start line');
      expect((await fetch(`${s.url()}/logs-follow-probe`)).status).toBe(404);
      await p.until(() => p.stdout().includes('404 GET /logs-follow-probe'), 'the request made after it started');
    },
  },
};

/**
 * Commands the quick start cannot run here, keyed as in STREAMING, each with why. None at present:
 * every streaming one runs bounded above.
 */
const SKIPPED: Record<string, string> = {};

/** What some comments promise beyond the exit code, checked after the command (keyed as above). */
const CHECKS: Record<string, (s: Session, r: RunResult) => Promise<void> | void> = {
  // "write a starter project.json (and ignore .svc/ in .gitignore)"
  'svc init': (s) => {
    expect(existsSync(join(s.root, 'project.json'))).toBe(true);
    expect(readFileSync(join(s.root, '.gitignore'), 'utf8')).toContain('.svc/');
  },
  // "returns once it answers"
  'svc serve --detach': async (s) => {
    expect((await fetch(`${s.url()}/healthz`)).status).toBe(200);
  },
  // "pid, port, uptime, version"
  'svc status': (s, r) => expect(r.stdout).toMatch(new RegExp(`^pid\\s+${s.daemons.at(-1)!.pid}$`, 'm')),
  // "stop, then start in the background on the same address"
  'svc restart': (s, r) => {
    const [before, after] = [s.daemons.at(-2)!, s.daemons.at(-1)!];
    expect(after.pid).not.toBe(before.pid);
    expect(after.url).toBe(before.url);
    expect(r.stdout).toContain(`restarted (pid ${before.pid} → ${after.pid})`);
  },
  // "graceful; returns once the process has exited"
  'svc stop': (s) => {
    expect(pidAlive(s.daemons.at(-1)!.pid)).toBe(false);
    expect(existsSync(join(s.root, '.svc', 'daemon.json'))).toBe(false);
  },
  // "prints the signing secret once"
  "svc webhooks add http://127.0.0.1:4000/ --events 'task:*'": (s, r) => {
    s.webhookSecret = /^secret: (\S+)$/m.exec(r.stdout)?.[1];
    expect(s.webhookSecret, r.stdout).toMatch(/^whsec_/);
  },
  // "the OpenAPI 3.1 document, no key needed"
  'curl -s http://127.0.0.1:7420/openapi.json': (_s, r) => expect(JSON.parse(r.stdout).openapi).toMatch(/^3\.1\./),
};

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface Streaming {
  stdout(): string;
  stderr(): string;
  /** Resolves once `pred` holds (checked at each output), rejects after `ms`. */
  until(pred: () => boolean, what: string, ms?: number): Promise<void>;
  /** Ctrl-C: SIGINT to its process group; resolves with how it ended. */
  interrupt(): Promise<Exit>;
}

const made: string[] = [];
const groups = new Set<ChildProcess>();
const daemonPids = new Set<number>();

afterAll(() => {
  // Whatever happened: no shell, streaming command or daemon of this test is left running.
  for (const child of groups) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const pid of daemonPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

const haveCurl = spawnSync('sh', ['-c', 'command -v curl'], { stdio: 'ignore' }).status === 0;

// Without curl on the machine, a stand-in that sends the same request through fetch: -s, -H, -d
// (POST, as curl does) and -X, nothing else.
const CURL_STANDIN = `
const args = process.argv.slice(2);
const headers = {};
let method, body, url;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '-s') continue;
  if (a === '-H') { const h = args[++i]; headers[h.slice(0, h.indexOf(':')).trim()] = h.slice(h.indexOf(':') + 1).trim(); }
  else if (a === '-d') { body = args[++i]; method ??= 'POST'; }
  else if (a === '-X') method = args[++i];
  else if (!a.startsWith('-') && url === undefined) url = a;
  else { console.error('curl stand-in: unsupported argument ' + a); process.exit(2); }
}
const res = await fetch(url, { method: method ?? 'GET', headers, body });
process.stdout.write(await res.text());
`;

class Session {
  readonly root = tempDir('svc-quickstart-');
  private readonly bin = tempDir('svc-quickstart-bin-');
  /** Shell assignments seen so far (`KEY=$(cat .svc/local.key)`), run before each later command. */
  private prelude = '';
  /** Every daemon this project has had, in order. */
  readonly daemons: { pid: number; url: string }[] = [];
  /** The signing secret `svc webhooks add` printed. */
  webhookSecret: string | undefined;
  /** Example id (its first 4 characters) → the real full id it stands for. */
  private readonly ids = new Map<string, { id: string; longest: string }>();

  constructor(readonly receiver: Receiver) {
    made.push(this.root, this.bin);
    // `svc` on the PATH, as `npm link` puts it there.
    writeFileSync(join(this.bin, 'svc'), `#!/bin/sh\nexec "${process.execPath}" "${SVC}" "$@"\n`);
    chmodSync(join(this.bin, 'svc'), 0o755);
    if (!haveCurl) {
      writeFileSync(join(this.bin, 'curl.mjs'), CURL_STANDIN);
      writeFileSync(join(this.bin, 'curl'), `#!/bin/sh\nexec "${process.execPath}" "${join(this.bin, 'curl.mjs')}" "$@"\n`);
      chmodSync(join(this.bin, 'curl'), 0o755);
    }
  }

  private env(): NodeJS.ProcessEnv {
    // HOME and the svc config dir are the test run's (vitest.config.ts); nothing points elsewhere.
    return { ...process.env, PATH: `${this.bin}:${process.env.PATH}`, NO_COLOR: '1', SERVICE_API_KEY: '', SVC_URL: '', SVC_PROJECT: '' };
  }

  url(): string {
    const info = readDaemonInfo(this.root);
    expect(info, 'a running daemon (.svc/daemon.json)').not.toBeNull();
    return info!.url;
  }

  /** Notes the daemon now running, if it is a new one. */
  noteDaemon(): void {
    const info = readDaemonInfo(this.root);
    if (!info || this.daemons.at(-1)?.pid === info.pid) return;
    daemonPids.add(info.pid);
    this.daemons.push({ pid: info.pid, url: info.url });
  }

  async api(method: string, path: string, body?: unknown): Promise<any> {
    const res = await fetch(this.url() + path, {
      method,
      headers: { authorization: `Bearer ${readLocalKey(this.root)}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as { ok: boolean; data: unknown };
    expect(json.ok, `${method} ${path}: ${JSON.stringify(json)}`).toBe(true);
    return json.data;
  }

  /** The newest task, mission or approval (ids are UUID v7: the greatest is the newest). */
  private async newest(): Promise<string | undefined> {
    const lists = await Promise.all(['/api/v1/tasks', '/api/v1/missions', '/api/v1/approvals'].map((p) => this.api('GET', `${p}?limit=1`)));
    return lists
      .flat()
      .map((r: { id: string }) => r.id)
      .sort()
      .at(-1);
  }

  /** `text` with the README's example ids replaced by the real ones (see the top of this file). */
  async withIds(text: string): Promise<string> {
    for (const [example] of text.matchAll(EXAMPLE_ID)) {
      const family = example.slice(0, 4);
      let known = this.ids.get(family);
      if (!known) {
        const id = await this.newest();
        expect(id, `README id ${example}: the quick start has made no task, mission or approval yet`).toBeDefined();
        known = { id: id!, longest: example };
        this.ids.set(family, known);
      }
      const [short, long] = example.length > known.longest.length ? [known.longest, example] : [example, known.longest];
      expect(long.startsWith(short), `README ids ${short} and ${long} start alike but are not one id shortened`).toBe(true);
      known.longest = long;
    }
    return text.replace(EXAMPLE_ID, (example) => this.ids.get(example.slice(0, 4))!.id.slice(-8).slice(0, example.length));
  }

  /** The rewrites of a command's text (see the top of this file), ids aside. */
  rewrite(text: string): string {
    const w = words(text);
    if (w[0] === 'svc' && w[1] === 'serve' && !w.includes('--port')) text += ' --port 0';
    if (text.includes('127.0.0.1:7420')) text = text.replaceAll('127.0.0.1:7420', new URL(this.url()).host);
    text = text.replaceAll('http://127.0.0.1:4000/', `${this.receiver.url}/`);
    return text;
  }

  private spawn(text: string): { child: ChildProcess; out: { stdout: string; stderr: string }; exited: Promise<Exit> } {
    // detached: its own process group, so Ctrl-C (SIGINT) and the cleanup reach the shell and svc.
    const child = spawn('bash', ['-c', `${this.prelude}${text}`], { cwd: this.root, env: this.env(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    groups.add(child);
    const out = { stdout: '', stderr: '' };
    child.stdout!.on('data', (c) => (out.stdout += c));
    child.stderr!.on('data', (c) => (out.stderr += c));
    const exited = new Promise<Exit>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (code, signal) => {
        groups.delete(child);
        resolve({ code, signal });
      });
    });
    return { child, out, exited };
  }

  /** Runs a command to its end (15 s at most: one that streams belongs in STREAMING). */
  async run(text: string): Promise<RunResult> {
    if (/^[A-Za-z_]\w*=/.test(text)) this.prelude += `${text}\n`;
    const { child, out, exited } = this.spawn(text);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
        reject(new Error(`\`${text}\` did not exit within 15 s (if it runs until Ctrl-C, add it to STREAMING):\n${out.stdout}\n${out.stderr}`));
      }, 15_000);
    });
    try {
      const { code } = await Promise.race([exited, timeout]);
      return { code, ...out };
    } finally {
      clearTimeout(timer);
    }
  }

  start(text: string): Streaming {
    const { child, out, exited } = this.spawn(text);
    return {
      stdout: () => out.stdout,
      stderr: () => out.stderr,
      until: (pred, what, ms = 10_000) =>
        new Promise<void>((resolve, reject) => {
          const check = () => {
            if (!pred()) return;
            done();
            resolve();
          };
          const fail = (why: string) => {
            done();
            reject(new Error(`\`${text}\` ${why} before showing ${what}:\n${out.stdout}\n${out.stderr}`));
          };
          const timer = setTimeout(() => fail(`ran ${ms} ms`), ms);
          const onExit = () => fail('exited');
          const done = () => {
            clearTimeout(timer);
            child.stdout!.off('data', check);
            child.stderr!.off('data', check);
            child.off('close', onExit);
          };
          child.stdout!.on('data', check);
          child.stderr!.on('data', check);
          child.on('close', onExit);
          check();
        }),
      interrupt: () => {
        process.kill(-child.pid!, 'SIGINT');
        return exited;
      },
    };
  }
}

const describeResult = (text: string, r: RunResult) => `\`${text}\` exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

describe("the README's quick start, command by command", () => {
  it(`runs on a temp project as the README shows it (API block through ${haveCurl ? 'curl' : 'a fetch stand-in for curl'})`, { timeout: 60_000 }, async () => {
    const cli = stepsOf(shBlock('Use the CLI'));
    const apiBlock = stepsOf(shBlock('Call the API'));
    const stop = cli.findIndex((s) => s.text === 'svc stop');
    expect(stop, 'the CLI block ends with `svc stop`').toBe(cli.length - 1);
    const steps = [...cli.slice(0, stop), ...apiBlock, cli[stop]!];
    // The tables name only commands the README has.
    for (const key of [...Object.keys(STREAMING), ...Object.keys(SKIPPED), ...Object.keys(CHECKS)]) {
      expect(
        steps.map((s) => s.text),
        `a command of this test's tables that the README no longer has`,
      ).toContain(key);
    }

    const s = new Session(await startReceiver());
    const times: string[] = [];
    try {
      for (const step of steps) {
        const t0 = Date.now();
        await runStep(s, step);
        times.push(`${Date.now() - t0} ms  ${step.text}`);
      }
    } finally {
      await s.receiver.close();
      // QS_TIMES=1 prints how long each command took.
      if (process.env.QS_TIMES) console.log(times.join('\n'));
    }
    expect(s.daemons.length, 'daemons started: svc serve, svc serve --detach, svc restart').toBe(3);
  });
});

/** One command of the README, run as the top of this file says. */
async function runStep(s: Session, step: Step): Promise<void> {
  if (SKIPPED[step.text] !== undefined) return;
  const text = await s.withIds(s.rewrite(step.text));
  const streaming = STREAMING[step.text];
  if (streaming) {
    const p = s.start(text);
    await streaming.ready(p, s);
    s.noteDaemon();
    expect(await p.interrupt(), `how \`${text}\` ends on Ctrl-C:\n${p.stdout()}\n${p.stderr()}`).toEqual({ code: 0, signal: null });
    await streaming.after?.(p, s);
    return;
  }
  let r = await s.run(text);
  s.noteDaemon();
  if (/--yes\b.*required without one/.test(step.comment)) {
    // Without a terminal, a destructive command refuses (exit 2) and says to add --yes.
    expect(r.code, describeResult(text, r)).toBe(2);
    expect(r.stderr).toContain('--yes');
    r = await s.run(`${text} --yes`);
  }
  expect(r.code, describeResult(text, r)).toBe(0);
  const quoted = /^"(.*)"$/.exec(step.comment)?.[1];
  for (const printed of [quoted, step.output]) {
    if (printed !== undefined) expect(r.stdout, `what \`${step.text}\` prints, as the README says`).toMatch(outputPattern(await s.withIds(printed)));
  }
  if (words(text)[0] === 'curl') {
    const answer = JSON.parse(r.stdout) as { ok?: boolean };
    if ('ok' in answer) expect(answer.ok, describeResult(text, r)).toBe(true);
  }
  await CHECKS[step.text]?.(s, r);
}
