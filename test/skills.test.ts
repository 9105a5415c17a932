import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSkillFile, renderSkillFile } from '../src/resources/skills/parse.js';
import { svc } from './cli-helpers.js';
import { eventually, startTestDaemon, type TestDaemon } from './harness.js';
import { runCase, type ApiCase } from './scenarios.js';

const skillMd = (name: string, description: string, extra = '', body = `# ${name}\n\nDo the ${name} thing.\n`) => `---\nname: ${name}\ndescription: ${description}\n${extra}---\n\n${body}`;

describe('parseSkillFile', () => {
  const cases: { name: string; text: string; folder?: string; error?: RegExp; expect?: Record<string, unknown> }[] = [
    {
      name: 'valid, comma-separated allowed-tools',
      text: skillMd('review', 'Review a diff', 'allowed-tools: Read, Grep, Bash(git diff:*)\n', 'Body\n'),
      expect: {
        description: 'Review a diff',
        allowedTools: ['Read', 'Grep', 'Bash(git diff:*)'],
        content: 'Body\n',
        frontMatter: { name: 'review', description: 'Review a diff', 'allowed-tools': 'Read, Grep, Bash(git diff:*)' },
      },
    },
    { name: 'allowed-tools as a list', text: skillMd('review', 'd', 'allowed-tools:\n  - Read\n  - Edit\n'), expect: { allowedTools: ['Read', 'Edit'] } },
    { name: 'unknown front matter fields are kept', text: skillMd('review', 'd', 'version: 2\n'), expect: { frontMatter: { name: 'review', description: 'd', version: 2 } } },
    { name: 'CRLF and BOM', text: '\uFEFF---\r\nname: review\r\ndescription: d\r\n---\r\nBody\r\n', expect: { description: 'd', content: 'Body\r\n' } },
    { name: 'no front matter', text: '# just markdown\n', error: /no YAML front matter/, expect: { content: '# just markdown\n', description: null } },
    { name: 'front matter not closed', text: '---\nname: review\ndescription: d\n', error: /not closed/ },
    { name: 'not YAML', text: '---\nname: [review\ndescription: d\n---\nx', error: /not valid YAML/ },
    { name: 'not a mapping', text: '---\n- a\n- b\n---\nx', error: /must be a YAML mapping/ },
    { name: 'empty front matter', text: '---\n---\nx', error: /must be a YAML mapping/ },
    { name: 'missing name', text: '---\ndescription: d\n---\nx', error: /"name" is missing/ },
    { name: 'missing description', text: '---\nname: review\n---\nx', error: /"description" is missing/ },
    { name: 'name does not match the folder', text: skillMd('other', 'd'), error: /name "other" does not match the folder name "review"/ },
    { name: 'bad allowed-tools', text: skillMd('review', 'd', 'allowed-tools: {a: 1}\n'), error: /allowed-tools/ },
    { name: 'folder name not kebab-case', folder: 'My_Skill', text: skillMd('My_Skill', 'd'), error: /folder name "My_Skill" is not a valid skill name/ },
  ];
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const r = parseSkillFile(c.text, c.folder ?? 'review');
    if (c.error) expect(r.error).toMatch(c.error);
    else expect(r.error).toBeUndefined();
    if (c.expect) expect(r).toMatchObject(c.expect);
  });

  it('reads back exactly what renderSkillFile wrote', () => {
    const src = { name: 'tricky', description: 'Use when: "quotes", colons: and\nnewlines', allowedTools: ['Read', 'Bash(a, b)'], content: '---\nnot front matter\n' };
    const r = parseSkillFile(renderSkillFile(src), 'tricky');
    expect(r).toMatchObject({ description: src.description, allowedTools: src.allowedTools, content: src.content });
    expect(r.error).toBeUndefined();
    expect(renderSkillFile({ name: 'x', description: 'd', allowedTools: ['Read', 'Grep'], content: '' })).toContain('allowed-tools: Read, Grep\n');
  });
});

let d: TestDaemon;
const lastEventId = async () => await d.daemon.app.events.lastId();
const eventsAfter = async (id: number) => (await d.daemon.app.events.since(id, 1000)).map((e) => ({ name: e.name, data: e.data }));
const skillEvents = async (id: number) => (await eventsAfter(id)).filter((e) => e.name.startsWith('skill:'));
const listSkills = async () => (await d.api('GET', '/api/v1/skills')).body.data as any[];
const skillDir = (name: string) => join(d.root, 'skills', name);

beforeAll(async () => {
  d = await startTestDaemon({
    files: {
      'skills/review/SKILL.md': skillMd('review', 'Review a diff', 'allowed-tools: Read, Grep\n'),
      'skills/deploy/SKILL.md': skillMd('deploy', 'Deploy the app'),
      'skills/deploy/scripts/run.sh': 'echo deploy\n',
      'skills/broken/SKILL.md': '---\nname: [broken\ndescription: x\n---\nbody\n',
      'skills/wrong-name/SKILL.md': skillMd('something-else', 'Mismatched'),
      'skills/no-desc/SKILL.md': '---\nname: no-desc\n---\nbody\n',
      'skills/not-a-skill/README.md': 'a folder without SKILL.md is not a skill\n',
      'skills/.hidden/SKILL.md': skillMd('.hidden', 'hidden'),
    },
  });
  for (const body of [{ name: 'lead', skills: ['review'] }, { name: 'dev' }]) {
    expect((await d.api('POST', '/api/v1/agents', { body })).status).toBe(201);
  }
});
afterAll(async () => {
  await d.close();
});

describe('skills API', () => {
  it('lists skills by name with assignedTo, and broken ones with an error', async () => {
    const skills = await listSkills();
    expect(skills.map((s) => s.name)).toEqual(['broken', 'deploy', 'no-desc', 'review', 'wrong-name']);
    const review = skills.find((s) => s.name === 'review');
    expect(review).toEqual({
      name: 'review',
      description: 'Review a diff',
      allowedTools: ['Read', 'Grep'],
      path: 'skills/review/SKILL.md',
      assignedTo: ['lead'],
      updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(skills.find((s) => s.name === 'deploy')).toMatchObject({ assignedTo: [], description: 'Deploy the app' });
    expect(skills.find((s) => s.name === 'deploy').error).toBeUndefined();
    expect(skills.find((s) => s.name === 'broken')).toMatchObject({ description: null, error: expect.stringMatching(/not valid YAML/) });
    expect(skills.find((s) => s.name === 'wrong-name').error).toMatch(/does not match the folder name "wrong-name"/);
    expect(skills.find((s) => s.name === 'no-desc').error).toMatch(/"description" is missing/);
  });

  it('shows a skill with its body and front matter', async () => {
    const res = await d.api('GET', '/api/v1/skills/review');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      name: 'review',
      content: '# review\n\nDo the review thing.\n',
      frontMatter: { name: 'review', description: 'Review a diff', 'allowed-tools': 'Read, Grep' },
      assignedTo: ['lead'],
    });
  });

  // Order matters: each case runs against the state the previous ones left.
  const cases: ApiCase[] = [
    {
      name: 'assign',
      method: 'POST',
      path: '/api/v1/skills/deploy/assign',
      body: { agent: 'dev' },
      status: 200,
      data: { skill: 'deploy', agent: 'dev' },
      events: [{ name: 'skill:assigned', data: { skill: 'deploy', agent: 'dev' } }],
    },
    { name: 'assign twice is a no-op', method: 'POST', path: '/api/v1/skills/deploy/assign', body: { agent: 'dev' }, status: 200, data: { skill: 'deploy', agent: 'dev' }, events: [] },
    {
      name: 'assign a second skill',
      method: 'POST',
      path: '/api/v1/skills/review/assign',
      body: { agent: 'dev' },
      status: 200,
      data: { skill: 'review', agent: 'dev' },
      events: [{ name: 'skill:assigned', data: { skill: 'review', agent: 'dev' } }],
    },
    { name: 'assign unknown skill', method: 'POST', path: '/api/v1/skills/ghost/assign', body: { agent: 'dev' }, status: 404, code: 'not_found', events: [] },
    { name: 'assign to unknown agent', method: 'POST', path: '/api/v1/skills/deploy/assign', body: { agent: 'ghost' }, status: 404, code: 'not_found', events: [] },
    { name: 'assign empty agent', method: 'POST', path: '/api/v1/skills/deploy/assign', body: { agent: '' }, status: 400, code: 'invalid_request', detailPath: 'body.agent', events: [] },
    { name: 'assign without agent', method: 'POST', path: '/api/v1/skills/deploy/assign', body: {}, status: 400, code: 'invalid_request', detailPath: 'body.agent', events: [] },
    {
      name: 'assign unknown property',
      method: 'POST',
      path: '/api/v1/skills/deploy/assign',
      body: { agent: 'dev', force: true },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.force',
      events: [],
    },
    {
      name: 'unassign',
      method: 'POST',
      path: '/api/v1/skills/review/unassign',
      body: { agent: 'dev' },
      status: 200,
      data: { skill: 'review', agent: 'dev' },
      events: [{ name: 'skill:unassigned', data: { skill: 'review', agent: 'dev' } }],
    },
    { name: 'unassign twice is a no-op', method: 'POST', path: '/api/v1/skills/review/unassign', body: { agent: 'dev' }, status: 200, data: { skill: 'review', agent: 'dev' }, events: [] },
    { name: 'unassign unknown skill', method: 'POST', path: '/api/v1/skills/ghost/unassign', body: { agent: 'dev' }, status: 404, code: 'not_found', events: [] },
    { name: 'unassign from unknown agent', method: 'POST', path: '/api/v1/skills/review/unassign', body: { agent: 'ghost' }, status: 404, code: 'not_found', events: [] },
    { name: 'unassign empty agent', method: 'POST', path: '/api/v1/skills/review/unassign', body: { agent: '' }, status: 400, code: 'invalid_request', detailPath: 'body.agent', events: [] },
    { name: 'show unknown', method: 'GET', path: '/api/v1/skills/ghost', status: 404, code: 'not_found', events: [] },
    { name: 'delete unknown', method: 'DELETE', path: '/api/v1/skills/ghost', status: 404, code: 'not_found', events: [] },
    {
      name: 'create',
      method: 'POST',
      path: '/api/v1/skills',
      body: { name: 'lint', description: 'Run the linter', content: '# Lint\n\nRun `npm run lint`.\n', allowedTools: ['Bash(npm run lint)'] },
      status: 201,
      events: [{ name: 'skill:created', data: { name: 'lint' } }],
    },
    { name: 'create existing', method: 'POST', path: '/api/v1/skills', body: { name: 'lint', description: 'again', content: '' }, status: 409, code: 'conflict', events: [] },
    { name: 'create over a folder without SKILL.md', method: 'POST', path: '/api/v1/skills', body: { name: 'not-a-skill', description: 'd', content: '' }, status: 409, code: 'conflict', events: [] },
    {
      name: 'create with a bad name',
      method: 'POST',
      path: '/api/v1/skills',
      body: { name: 'Bad_Name', description: 'd', content: '' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.name',
      events: [],
    },
    {
      name: 'create with a path in the name',
      method: 'POST',
      path: '/api/v1/skills',
      body: { name: '../escape', description: 'd', content: '' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.name',
      events: [],
    },
    { name: 'create without description', method: 'POST', path: '/api/v1/skills', body: { name: 'x', content: '' }, status: 400, code: 'invalid_request', detailPath: 'body.description', events: [] },
    {
      name: 'create with unknown property',
      method: 'POST',
      path: '/api/v1/skills',
      body: { name: 'x', description: 'd', content: '', color: 'red' },
      status: 400,
      code: 'invalid_request',
      detailPath: 'body.color',
      events: [],
    },
    {
      name: 'delete an assigned skill unassigns it',
      method: 'DELETE',
      path: '/api/v1/skills/deploy',
      status: 200,
      data: { removed: true },
      events: [
        { name: 'skill:unassigned', data: { skill: 'deploy', agent: 'dev' } },
        { name: 'skill:removed', data: { name: 'deploy' } },
      ],
    },
  ];

  it.each(cases.map((c, i) => [i, c.name, c] as const))('%i %s', async (_i, _n, c) => {
    await runCase(d, c);
  });

  it('assignment lives in the agent and shows in the listing', async () => {
    expect((await d.api('GET', '/api/v1/agents/lead')).body.data.skills).toEqual(['review']);
    expect((await d.api('GET', '/api/v1/agents/dev')).body.data.skills).toEqual([]);
    expect((await listSkills()).find((s) => s.name === 'review').assignedTo).toEqual(['lead']);
  });

  it('create wrote the folder and SKILL.md, readable back', async () => {
    const text = readFileSync(join(skillDir('lint'), 'SKILL.md'), 'utf8');
    expect(text).toMatch(/^---\nname: lint\ndescription: Run the linter\nallowed-tools: Bash\(npm run lint\)\n---\n\n# Lint\n/);
    const res = await d.api('GET', '/api/v1/skills/lint');
    expect(res.body.data).toMatchObject({
      name: 'lint',
      description: 'Run the linter',
      allowedTools: ['Bash(npm run lint)'],
      content: '# Lint\n\nRun `npm run lint`.\n',
      path: 'skills/lint/SKILL.md',
      assignedTo: [],
    });
    expect(res.body.data.error).toBeUndefined();
  });

  it('delete removed the folder with everything in it', () => {
    expect(existsSync(skillDir('deploy'))).toBe(false);
    expect(existsSync(skillDir('review'))).toBe(true);
  });

  it('reflects a skill added, edited and removed on disk, with one event each', async () => {
    const before = await lastEventId();
    mkdirSync(skillDir('outside'));
    writeFileSync(join(skillDir('outside'), 'SKILL.md'), skillMd('outside', 'First words'));
    await eventually(async () => (await listSkills()).some((s) => s.name === 'outside'), 1000);
    expect((await d.api('GET', '/api/v1/skills/outside')).body.data).toMatchObject({ description: 'First words', content: '# outside\n\nDo the outside thing.\n' });

    writeFileSync(join(skillDir('outside'), 'SKILL.md'), skillMd('outside', 'Second words', '', 'new body\n'));
    await eventually(async () => (await d.api('GET', '/api/v1/skills/outside')).body.data.description === 'Second words', 1000);
    expect((await d.api('GET', '/api/v1/skills/outside')).body.data.content).toBe('new body\n');

    writeFileSync(join(skillDir('outside'), 'SKILL.md'), 'no front matter any more\n');
    await eventually(async () => /no YAML front matter/.test((await d.api('GET', '/api/v1/skills/outside')).body.data.error ?? ''), 1000);

    rmSync(skillDir('outside'), { recursive: true });
    await eventually(async () => (await d.api('GET', '/api/v1/skills/outside')).status === 404, 1000);
    // The index answers as soon as it has read the folder; its event commits right after.
    await eventually(async () => (await skillEvents(before)).length >= 2, 1000);
    expect(await skillEvents(before)).toEqual([
      { name: 'skill:created', data: { name: 'outside' } },
      { name: 'skill:removed', data: { name: 'outside' } },
    ]);
  });

  it('does not emit twice when the watcher sees what the API wrote or removed', async () => {
    const before = await lastEventId();
    expect((await d.api('POST', '/api/v1/skills', { body: { name: 'once', description: 'd', content: 'x' } })).status).toBe(201);
    expect((await d.api('DELETE', '/api/v1/skills/lint')).status).toBe(200);
    // The watcher handles changes in order: once it reports this marker it has seen the API's writes too.
    mkdirSync(skillDir('marker'));
    writeFileSync(join(skillDir('marker'), 'SKILL.md'), skillMd('marker', 'm'));
    await eventually(async () => (await skillEvents(before)).some((e) => e.data.name === 'marker'), 1000);
    expect(await skillEvents(before)).toEqual([
      { name: 'skill:created', data: { name: 'once' } },
      { name: 'skill:removed', data: { name: 'lint' } },
      { name: 'skill:created', data: { name: 'marker' } },
    ]);
  });
});

describe('skills folder lifecycle', () => {
  let e: TestDaemon;
  beforeAll(async () => {
    e = await startTestDaemon({ files: { 'other/alpha/SKILL.md': skillMd('alpha', 'In the other folder') } });
  });
  afterAll(async () => {
    await e.close();
  });
  const names = async () => ((await e.api('GET', '/api/v1/skills')).body.data as { name: string }[]).map((s) => s.name);

  it('picks up a skills folder created after start, and its re-creation after removal', async () => {
    expect(existsSync(join(e.root, 'skills'))).toBe(false);
    expect(await names()).toEqual([]);
    mkdirSync(join(e.root, 'skills', 'late'), { recursive: true });
    writeFileSync(join(e.root, 'skills', 'late', 'SKILL.md'), skillMd('late', 'Came later'));
    await eventually(async () => (await names()).includes('late'), 1000);

    rmSync(join(e.root, 'skills'), { recursive: true });
    await eventually(async () => (await names()).length === 0, 1000);
    mkdirSync(join(e.root, 'skills', 'again'), { recursive: true });
    writeFileSync(join(e.root, 'skills', 'again', 'SKILL.md'), skillMd('again', 'Back'));
    await eventually(async () => (await names()).includes('again'), 1000);
  });

  it('follows skillsDir when project.json changes it', async () => {
    const before = await e.daemon.app.events.lastId();
    e.writeConfig({ name: 'test-project', skillsDir: 'other' });
    await eventually(async () => JSON.stringify(await names()) === '["alpha"]', 1000);
    // The index answers as soon as it has read the folder; its events commit right after.
    const skillEvents = async () => (await e.daemon.app.events.since(before, 100)).filter((x) => x.name.startsWith('skill:'));
    await eventually(async () => (await skillEvents()).length >= 2, 1000);
    const fired = await skillEvents();
    expect(fired.map((x) => [x.name, x.data.name])).toEqual([
      ['skill:created', 'alpha'],
      ['skill:removed', 'again'],
    ]);
    // And watches the new folder.
    mkdirSync(join(e.root, 'other', 'beta'));
    writeFileSync(join(e.root, 'other', 'beta', 'SKILL.md'), skillMd('beta', 'b'));
    await eventually(async () => (await names()).includes('beta'), 1000);
  });
});

describe('skills and symbolic links', () => {
  it('never follows a link: a linked SKILL.md or skill folder is listed with an error and its target is not served', async () => {
    const { symlinkSync } = await import('node:fs');
    const e = await startTestDaemon({ files: { 'outside/secret.md': skillMd('secret', 'TOP-SECRET-TARGET'), 'outside/dir/SKILL.md': skillMd('dir', 'TOP-SECRET-DIR') } });
    try {
      mkdirSync(join(e.root, 'skills', 'linked-file'), { recursive: true });
      symlinkSync(join(e.root, 'outside', 'secret.md'), join(e.root, 'skills', 'linked-file', 'SKILL.md'));
      symlinkSync('/proc/self/environ', join(e.root, 'skills', 'linked-file', 'ENV.md'));
      symlinkSync(join(e.root, 'outside', 'dir'), join(e.root, 'skills', 'linked-dir'));
      await eventually(async () => ((await e.api('GET', '/api/v1/skills')).body.data as unknown[]).length === 2, 1000);
      const list = (await e.api('GET', '/api/v1/skills')).body.data as { name: string; error?: string }[];
      expect(list.map((x) => [x.name, x.error])).toEqual([
        ['linked-dir', expect.stringMatching(/symbolic link/)],
        ['linked-file', expect.stringMatching(/symbolic link/)],
      ]);
      for (const name of ['linked-file', 'linked-dir']) {
        const shown = await e.api('GET', `/api/v1/skills/${name}`);
        expect(JSON.stringify(shown.body)).not.toContain('TOP-SECRET');
      }
    } finally {
      await e.close();
    }
  });
});

describe('svc skills (CLI)', () => {
  const run = (...args: string[]) => svc(['--url', d.url, '--api-key', d.key, ...args]);

  it('adds, lists, shows, assigns, unassigns and removes', async () => {
    const add = await run('skills', 'add', 'cli-skill', '--description', 'Made by the CLI', '--content', '# CLI\n', '--tool', 'Read');
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain('created skill cli-skill at skills/cli-skill/SKILL.md');

    const ls = await run('skills', 'ls');
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout.split('\n')[0]).toMatch(/^NAME\s+DESCRIPTION\s+ASSIGNED TO\s+ERROR$/);
    expect(ls.stdout).toMatch(/cli-skill\s+Made by the CLI/);
    expect(ls.stdout).toMatch(/broken\s+-\s+-\s+the front matter is not valid YAML/);

    const assign = await run('skills', 'assign', 'cli-skill', 'dev', '--json');
    expect(assign.code, assign.stderr).toBe(0);
    expect(JSON.parse(assign.stdout)).toEqual({ skill: 'cli-skill', agent: 'dev' });
    const json = JSON.parse((await run('skills', 'ls', '--json')).stdout);
    expect(json.find((s: { name: string }) => s.name === 'cli-skill')).toMatchObject({ assignedTo: ['dev'], allowedTools: ['Read'] });

    const show = await run('skills', 'show', 'cli-skill');
    expect(show.stdout).toMatch(/assignedTo\s+dev/);
    expect(show.stdout).toContain('# CLI\n');

    expect((await run('skills', 'unassign', 'cli-skill', 'dev')).stdout).toBe('unassigned skill cli-skill from dev\n');
    expect((await run('skills', 'rm', 'cli-skill', '--yes')).stdout).toBe('removed skill cli-skill\n');
    expect(existsSync(skillDir('cli-skill'))).toBe(false);
  });

  it('reads the body from a file, and reports errors with exit codes', async () => {
    const file = join(d.root, 'body.md');
    writeFileSync(file, 'from a file\n');
    expect((await run('skills', 'add', 'from-file', '-d', 'd', '--file', file)).code).toBe(0);
    expect((await d.api('GET', '/api/v1/skills/from-file')).body.data.content).toBe('from a file\n');

    const missing = await run('skills', 'show', 'ghost');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not_found (404)');
    const both = await run('skills', 'add', 'x', '-d', 'd', '--file', file, '--content', 'y');
    expect(both.code).toBe(2);
    const neither = await run('skills', 'add', 'x', '-d', 'd');
    expect(neither.code).toBe(2);
  });
});
