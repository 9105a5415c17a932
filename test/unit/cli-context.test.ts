import { Command } from 'commander';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliContext, NoDaemonError } from '../../src/cli/context.js';
import { makeProject } from '../harness.js';

function context(args: string[]) {
  const cmd = new Command().option('--project <dir>').option('--url <url>').option('--api-key <key>').option('--json').exitOverride();
  cmd.parse(args, { from: 'user' });
  return cliContext(cmd);
}

function projectWithDaemon(url: string): string {
  const root = makeProject();
  mkdirSync(join(root, '.svc'));
  writeFileSync(join(root, '.svc', 'local.key'), 'svc_local-key\n');
  writeFileSync(join(root, '.svc', 'daemon.json'), JSON.stringify({ pid: process.pid, url }));
  return root;
}

describe('cliContext', () => {
  it('finds the daemon and the local key from the project', () => {
    const root = projectWithDaemon('http://127.0.0.1:4567');
    const ctx = context(['--project', root]);
    expect(ctx.client.url).toBe('http://127.0.0.1:4567');
    expect(ctx.client.headers().authorization).toBe('Bearer svc_local-key');
  });

  it('sends the project key to an explicit URL only when it is loopback', () => {
    const root = projectWithDaemon('http://127.0.0.1:4567');
    expect(context(['--project', root, '--url', 'http://localhost:9']).client.headers().authorization).toBe('Bearer svc_local-key');
    expect(context(['--project', root, '--url', 'https://svc.example.com']).client.headers().authorization).toBeUndefined();
    expect(context(['--project', root, '--url', 'https://svc.example.com', '--api-key', 'given']).client.headers().authorization).toBe('Bearer given');
  });

  it('refuses a daemon.json whose process is gone, rather than calling whoever took the port', () => {
    const root = makeProject();
    mkdirSync(join(root, '.svc'));
    writeFileSync(join(root, '.svc', 'daemon.json'), JSON.stringify({ pid: 2 ** 22 + 12345, url: 'http://127.0.0.1:4567' }));
    expect(() => context(['--project', root])).toThrow(NoDaemonError);
  });
});
