import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configRows, configurationMarkdown } from '../src/config/docs.js';
import { ProjectConfigSchema } from '../src/config/schema.js';
import { SVC } from './cli-helpers.js';
import { startTestDaemon } from './harness.js';
import { tempDir } from './temp.js';

// What a newcomer copies from the docs works as written: the project.json examples start a daemon,
// docs/configuration.md lists every field the daemon accepts, and the completion commands of the
// README install into a home where the folders do not exist yet.

const repo = new URL('..', import.meta.url);
const read = (p: string) => readFileSync(new URL(p, repo), 'utf8');

/** The first ```json block after `heading` in a Markdown file. */
function jsonAfter(markdown: string, heading: string): unknown {
  const from = markdown.indexOf(heading);
  expect(from, heading).toBeGreaterThanOrEqual(0);
  const m = /```json\n([\s\S]*?)\n```/.exec(markdown.slice(from));
  return JSON.parse(m![1]!);
}

async function startsAsPasted(config: unknown): Promise<void> {
  expect(ProjectConfigSchema.safeParse(config).error?.issues ?? []).toEqual([]);
  const root = tempDir('svc-pasted-');
  writeFileSync(join(root, 'project.json'), JSON.stringify(config, null, 2));
  const d = await startTestDaemon({ root });
  try {
    // The key given only as a sha256 opens the API, as the text says.
    expect((await d.api('GET', '/api/v1/data', { key: 'ci-key-change-me-0123456789' })).status).toBe(200);
    expect((await d.api('GET', '/api/v1/tasks', { key: 'ci-key-change-me-0123456789' })).status).toBe(403);
  } finally {
    await d.close();
  }
}

describe('project.json as the docs show it', () => {
  it('docs/configuration.md is the generated page (run `npm run docs` after changing the schema)', () => {
    expect(read('docs/configuration.md')).toBe(configurationMarkdown());
  });

  it('lists every field of the schema, each with what it does', () => {
    const paths = configRows().map((r) => r.path);
    for (const field of ['server.maxConnections', 'apiKeys[].sha256', 'apiKeys[].grants[].actions', 'providers.<id>.headers.<name>', 'data.workerMemoryMb', 'events.maxEvents', 'skillsDir']) {
      expect(paths).toContain(`\`${field}\``);
    }
    // Every leaf but a map's values says what it does.
    const silent = configRows().filter((r) => !r.what && !/object/.test(r.type) && !r.path.includes('<name>`'));
    expect(silent.map((r) => r.path)).toEqual([]);
  });

  it('the example of docs/configuration.md starts as pasted', async () => {
    await startsAsPasted(jsonAfter(read('docs/configuration.md'), '## An example that starts as pasted'));
  });

  it('the example in the README starts as pasted', async () => {
    await startsAsPasted(jsonAfter(read('README.md'), '## project.json'));
  });
});

describe('shell completion as the README installs it', () => {
  it('every command of the README block works in a home where the folders do not exist', () => {
    const readme = read('README.md');
    const from = readme.indexOf('**Shell completion**');
    const block = /```sh\n([\s\S]*?)\n```/.exec(readme.slice(from))![1]!;
    const home = tempDir('svc-home-');
    // `svc` on the PATH, as an installed one would be.
    const bin = join(home, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'svc'), `#!/bin/sh\nexec "${process.execPath}" "${SVC}" "$@"\n`);
    chmodSync(join(bin, 'svc'), 0o755);
    const r = spawnSync('bash', ['-e', '-c', block], { env: { HOME: home, PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    for (const f of ['.local/share/bash-completion/completions/svc', '.zfunc/_svc', '.config/fish/completions/svc.fish']) {
      expect(existsSync(join(home, f)), f).toBe(true);
      expect(readFileSync(join(home, f), 'utf8')).toContain('svc completion');
    }
  });
});
