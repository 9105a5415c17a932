import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const SVC = fileURLToPath(new URL('../bin/svc', import.meta.url));

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI as a child process (`npm test` builds dist/ first). */
export function svc(args: string[], opts: { cwd?: string; env?: Record<string, string>; input?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, NO_COLOR: '1', SERVICE_API_KEY: '', SVC_URL: '', SVC_PROJECT: '', ...opts.env },
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
export function svcAgainst(d: { url: string; key: string }, args: string[], opts: { input?: string } = {}): Promise<RunResult> {
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

export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((r) => child.once('exit', (code) => r(code)));
}
