import { spawn, type ChildProcess } from 'node:child_process';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { run } from '../bin/svc.js';

export const SVC = fileURLToPath(new URL('../bin/svc', import.meta.url));

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface SvcOptions {
  cwd?: string;
  env?: Record<string, string>;
  input?: string;
  /** Run as if at a terminal: confirmations and prompts ask (stdin answers them). */
  isTTY?: boolean;
  columns?: number;
}

/** The environment a CLI run sees: the test's own, minus what would point it elsewhere. */
const cliEnv = (extra: Record<string, string> = {}) => ({ ...process.env, NO_COLOR: '1', SERVICE_API_KEY: '', SVC_URL: '', SVC_PROJECT: '', ...extra });

/** Runs the CLI in this process through run(), the way bin/svc does, with output captured. */
export async function svc(args: string[], opts: SvcOptions = {}): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    stdout: { write: (s: string) => (stdout += s), isTTY: opts.isTTY },
    stderr: { write: (s: string) => (stderr += s), isTTY: opts.isTTY },
    stdin: Readable.from([opts.input ?? '']),
    env: cliEnv(opts.env),
    cwd: opts.cwd ?? process.cwd(),
    isTTY: opts.isTTY ?? false,
    columns: opts.columns ?? 200,
  });
  return { code, stdout, stderr };
}

/** Runs the built CLI as a child process (`npm test` builds dist/ first): for exit codes, signals, the real binary. */
export function svcChild(args: string[], opts: { cwd?: string; env?: Record<string, string>; input?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC, ...args], {
      cwd: opts.cwd,
      env: cliEnv(opts.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

/** Runs the CLI against a test daemon by its URL and key, as any client outside the project would. */
export function svcAgainst(d: { url: string; key: string }, args: string[], opts: SvcOptions = {}): Promise<RunResult> {
  return svc(['--url', d.url, '--api-key', d.key, ...args], opts);
}

/** Starts `svc serve` as a child process and resolves once it logs that it is listening. */
export function serve(cwd: string, args: string[] = ['--port', '0'], env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC, 'serve', ...args], { cwd, env: { ...process.env, NO_COLOR: '1', SERVICE_API_KEY: '', ...env } });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`svc serve did not start: ${out}`)), 15_000);
    const onData = (c: Buffer) => {
      out += c;
      const m = /"msg":"listening","url":"([^"]+)"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]!, output: () => out });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c) => (out += c));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`svc serve exited ${code}: ${out}`));
    });
  });
}

/**
 * Starts the built CLI for a command that stays up (`webhooks listen`, `notify run`) and resolves
 * once its stderr says `Ready.`; it is killed if that does not come within 15 s.
 */
export function startReady(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<{ child: ChildProcess; out: () => string; err: () => string }> {
  const child = spawn(process.execPath, [SVC, ...args], { cwd: opts.cwd, env: { ...process.env, NO_COLOR: '1', ...opts.env } });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c) => (out += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc ${args.join(' ')} was not ready within 15 s: ${err}`));
    }, 15_000);
    child.stderr!.on('data', (c) => {
      err += c;
      if (!/Ready\./.test(err)) return;
      clearTimeout(timer);
      resolve({ child, out: () => out, err: () => err });
    });
  });
}

export function exited(child: ChildProcess): Promise<number | null> {
  // Killed by a signal, it has no exit code but a signal code: it has exited all the same.
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((r) => child.once('exit', (code) => r(code)));
}
