import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fill, placeholders } from '../src/resources/playbooks/template.js';
import { svcAgainst } from './cli-helpers.js';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { runCase, type ApiCase, type ExpectedEvent } from './scenarios.js';

const P = '/api/v1/playbooks';

const NIGHTLY = {
  description: 'nightly checks',
  parameters: [{ name: 'branch', type: 'string', default: 'main' }],
  mission: { name: 'nightly on {{branch}}', tasks: [{ title: 'test {{branch}}' }, { title: 'report', dependsOn: ['test {{branch}}'] }] },
};

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon({
    files: {
      'playbooks/nightly/playbook.json': JSON.stringify(NIGHTLY),
      'playbooks/broken/playbook.json': '{ not json',
      'playbooks/misnamed/playbook.json': JSON.stringify({ ...NIGHTLY, name: 'other-name' }),
      'playbooks/bad-template/playbook.json': JSON.stringify({ mission: { name: 'x {{nope}}', tasks: [] } }),
      'playbooks/Not_Kebab/playbook.json': JSON.stringify(NIGHTLY),
      'playbooks/no-file-here/README.md': 'a folder without playbook.json is not a playbook',
    },
  });
  expect((await d.api('POST', '/api/v1/agents', { body: { name: 'ana' } })).status).toBe(201);
});
afterAll(async () => {
  await d.close();
});

const lastEventId = async () => await d.daemon.app.events.lastId();
const eventsAfter = async (id: number) => (await d.daemon.app.events.since(id, 1000)).map((e) => ({ name: e.name, data: e.data }));

function writePlaybookFile(name: string, content: unknown): void {
  mkdirSync(join(d.root, 'playbooks', name), { recursive: true });
  writeFileSync(join(d.root, 'playbooks', name, 'playbook.json'), typeof content === 'string' ? content : JSON.stringify(content));
}

describe('templates (pure)', () => {
  const template = { name: '{{v}} / {{ n }}', n: '{{n}}', flag: '{{b}}', gone: '{{missing}}', list: ['{{missing}}', 'x{{missing}}y', '{{v}}'], nested: { deep: ['a {{b}}'] } };

  it('finds every placeholder with the path of its string', () => {
    expect(placeholders(template)).toEqual([
      { path: ['name'], name: 'v' },
      { path: ['name'], name: 'n' },
      { path: ['n'], name: 'n' },
      { path: ['flag'], name: 'b' },
      { path: ['gone'], name: 'missing' },
      { path: ['list', 0], name: 'missing' },
      { path: ['list', 1], name: 'missing' },
      { path: ['list', 2], name: 'v' },
      { path: ['nested', 'deep', 0], name: 'b' },
    ]);
  });

  it('fills typed values, interpolates text and drops whole placeholders with no value', () => {
    expect(fill(template, { v: '1.0', n: 3, b: true })).toEqual({ name: '1.0 / 3', n: 3, flag: true, list: ['xy', '1.0'], nested: { deep: ['a true'] } });
  });
});

const RELEASE = {
  name: 'release-train',
  description: 'ship a version',
  parameters: [
    { name: 'version', type: 'string', required: true, description: 'what to ship' },
    { name: 'env', type: 'string', enum: ['staging', 'prod'], default: 'staging' },
    { name: 'retries', type: 'number', default: 2 },
    { name: 'notify', type: 'boolean', default: false },
    { name: 'owner', type: 'string' },
  ],
  mission: {
    name: 'Release {{version}} to {{env}}',
    goal: 'Get {{ version }} out (notify: {{notify}})',
    tasks: [
      { title: 'build {{version}}', description: 'build for {{env}}', maxRetries: '{{retries}}', assignTo: '{{owner}}' },
      { title: 'deploy {{version}} to {{env}}', dependsOn: ['build {{version}}'], labels: ['{{env}}', 'release'] },
    ],
  },
};

const invalidPlaybook = (name: string, body: Record<string, unknown>, detailPath: string, message?: RegExp): ApiCase => ({
  name,
  method: 'POST',
  path: P,
  body: { name: 'x', mission: { name: 'x' }, ...body },
  status: 400,
  code: 'invalid_request',
  detailPath,
  message,
  events: [],
});

const run = (name: string, params: Record<string, unknown>, status: number, extra: Partial<ApiCase> = {}): ApiCase => ({
  name,
  method: 'POST',
  path: `${P}/release-train/run`,
  body: { params },
  status,
  ...extra,
});

let ran: any;
const missionEvents = (): ExpectedEvent[] => [
  ...ran.tasks.map((t: any) => ({ name: 'task:created', data: { taskId: t.id, title: t.title, status: 'draft', assignTo: t.assignTo, missionId: ran.mission.id } })),
  { name: 'mission:created', data: { missionId: ran.mission.id, name: ran.mission.name, taskIds: ran.tasks.map((t: any) => t.id) } },
];

const cases: (ApiCase & { keep?: boolean })[] = [
  {
    name: 'create',
    method: 'POST',
    path: P,
    body: RELEASE,
    status: 201,
    dataMatches: { name: 'release-train', description: 'ship a version', parameters: RELEASE.parameters, mission: RELEASE.mission, source: 'api', file: null, error: null },
    events: [],
  },
  { name: 'create twice', method: 'POST', path: P, body: RELEASE, status: 409, code: 'conflict', events: [] },
  { name: 'a name taken by a playbook file', method: 'POST', path: P, body: { ...RELEASE, name: 'nightly' }, status: 409, code: 'conflict', message: /playbooks\/nightly\/playbook\.json/, events: [] },
  invalidPlaybook('name must be kebab-case', { name: 'Release_Train' }, 'body.name'),
  invalidPlaybook('a placeholder naming no parameter', { mission: { name: 'x', tasks: [{ title: 'do {{nope}}' }] } }, 'body.mission.tasks.0.title', /\{\{nope\}\} names no parameter/),
  invalidPlaybook('the template must be a mission body: task without title', { mission: { name: 'x', tasks: [{ description: 'no title' }] } }, 'body.mission.tasks.0.title'),
  invalidPlaybook('the template must be a mission body: unknown property', { mission: { name: 'x', colour: 'red' } }, 'body.mission.colour'),
  invalidPlaybook('a default of the wrong type', { parameters: [{ name: 'n', type: 'number', default: 'two' }] }, 'body.parameters.0.default'),
  invalidPlaybook('a default outside the enum', { parameters: [{ name: 'e', type: 'string', enum: ['a'], default: 'b' }] }, 'body.parameters.0.default'),
  invalidPlaybook(
    'duplicate parameter names',
    {
      parameters: [
        { name: 'a', type: 'string' },
        { name: 'a', type: 'number' },
      ],
    },
    'body.parameters.1.name',
  ),
  invalidPlaybook('unknown parameter type', { parameters: [{ name: 'a', type: 'date' }] }, 'body.parameters.0.type'),
  { name: 'show', method: 'GET', path: `${P}/release-train`, status: 200, dataMatches: { name: 'release-train', source: 'api' }, events: [] },
  { name: 'show unknown', method: 'GET', path: `${P}/nope`, status: 404, code: 'not_found', events: [] },
  {
    name: 'patch the description',
    method: 'PATCH',
    path: `${P}/release-train`,
    body: { description: 'ship a version, carefully' },
    status: 200,
    dataMatches: { description: 'ship a version, carefully', mission: RELEASE.mission },
    events: [],
  },
  { name: 'patch a template that breaks', method: 'PATCH', path: `${P}/release-train`, body: { parameters: [] }, status: 400, code: 'invalid_request', detailPath: 'body.mission.name', events: [] },
  { name: 'patch unknown', method: 'PATCH', path: `${P}/nope`, body: { description: null }, status: 404, code: 'not_found', events: [] },
  { name: 'patch a playbook file', method: 'PATCH', path: `${P}/nightly`, body: { description: null }, status: 409, code: 'conflict', message: /change or remove that file/, events: [] },
  { name: 'delete a playbook file', method: 'DELETE', path: `${P}/nightly`, status: 409, code: 'conflict', events: [] },
  run('run: missing required parameter', {}, 400, { code: 'invalid_request', detailPath: 'body.params.version', message: /required string parameter/, events: [] }),
  run('run: unknown parameter', { version: '1', colour: 'red' }, 400, { code: 'invalid_request', detailPath: 'body.params.colour', message: /unknown parameter/, events: [] }),
  run('run: value outside the enum', { version: '1', env: 'moon' }, 400, { code: 'invalid_request', detailPath: 'body.params.env', message: /one of: "staging", "prod"/, events: [] }),
  run('run: wrong type', { version: '1', retries: 'two' }, 400, { code: 'invalid_request', detailPath: 'body.params.retries', message: /must be a number/, events: [] }),
  run('run: boolean given as text', { version: '1', notify: 'yes' }, 400, { code: 'invalid_request', detailPath: 'body.params.notify', events: [] }),
  run('run: null is not a value', { version: null }, 400, { code: 'invalid_request', detailPath: 'body.params.version', events: [] }),
  { name: 'run: unknown playbook', method: 'POST', path: `${P}/nope/run`, body: { params: {} }, status: 404, code: 'not_found', events: [] },
  {
    ...run('run: placeholders filled, typed values kept, defaults used', { version: '1.2', owner: 'ana', retries: 0, env: 'prod' }, 201),
    onSuccess: (data) => (ran = data),
    dataMatches: {
      mission: { name: 'Release 1.2 to prod', goal: 'Get 1.2 out (notify: false)', status: 'draft' },
      tasks: [
        { title: 'build 1.2', description: 'build for prod', maxRetries: 0, assignTo: 'ana', status: 'draft' },
        { title: 'deploy 1.2 to prod', labels: ['prod', 'release'] },
      ],
    },
    events: missionEvents,
  },
  {
    ...run('run: an optional parameter left out drops its field', { version: '2.0' }, 201),
    onSuccess: (data) => (ran = data),
    dataMatches: { mission: { name: 'Release 2.0 to staging' }, tasks: [{ title: 'build 2.0', maxRetries: 2, assignTo: null }, { labels: ['staging', 'release'] }] },
    events: missionEvents,
  },
  run('run: a value that makes an invalid mission → 422', { version: '3', owner: 'ghost' }, 422, { code: 'unprocessable', detailPath: 'mission.tasks.0.assignTo', events: [] }),
  {
    name: 'run a playbook file',
    method: 'POST',
    path: `${P}/nightly/run`,
    body: { params: { branch: 'dev' } },
    status: 201,
    onSuccess: (data) => (ran = data),
    dataMatches: { mission: { name: 'nightly on dev' }, tasks: [{ title: 'test dev' }, { title: 'report' }] },
    events: missionEvents,
  },
  { name: 'run an invalid playbook file → 422', method: 'POST', path: `${P}/broken/run`, body: { params: {} }, status: 422, code: 'unprocessable', message: /not valid JSON/, events: [] },
  { name: 'delete', method: 'DELETE', path: `${P}/release-train`, status: 200, data: { removed: true }, events: [] },
  { name: 'delete twice', method: 'DELETE', path: `${P}/release-train`, status: 404, code: 'not_found', events: [] },
];

describe('playbooks', () => {
  it.each(cases.map((c, i) => [i, c.name, c] as const))('%i %s', async (_i, _n, c) => {
    await runCase(d, c);
  });

  it('dependsOn follows the filled titles', async () => {
    const res = await d.api('POST', `${P}/nightly/run`, { body: { params: {} } });
    expect(res.status).toBe(201);
    const [test, report] = res.body.data.tasks;
    expect(test.title).toBe('test main');
    expect(report.dependsOn).toEqual([test.id]);
    expect(res.body.data.mission.taskIds).toEqual([test.id, report.id]);
  });

  it('titles that collide once filled → 422, and nothing is created', async () => {
    const body = {
      name: 'pair',
      parameters: [
        { name: 'a', type: 'string' },
        { name: 'b', type: 'string' },
      ],
      mission: { name: 'pair', tasks: [{ title: '{{a}}' }, { title: '{{b}}' }] },
    };
    expect((await d.api('POST', P, { body })).status).toBe(201);
    const before = await lastEventId();
    const res = await d.api('POST', `${P}/pair/run`, { body: { params: { a: 'same', b: 'same' } } });
    expect(res.status).toBe(422);
    expect(res.body.details.map((x: { path: string }) => x.path)).toEqual(['mission.tasks.1.title']);
    expect(await eventsAfter(before)).toEqual([]);
  });

  it('a placeholder in the deadline is checked at run time', async () => {
    const body = { name: 'due', parameters: [{ name: 'when', type: 'string', required: true }], mission: { name: 'due', deadline: '{{when}}' } };
    expect((await d.api('POST', P, { body })).status).toBe(201);
    const bad = await d.api('POST', `${P}/due/run`, { body: { params: { when: 'soon' } } });
    expect(bad.status).toBe(422);
    expect(bad.body.details[0].path).toBe('mission.deadline');
    const good = await d.api('POST', `${P}/due/run`, { body: { params: { when: '2031-05-01T00:00:00Z' } } });
    expect(good.status).toBe(201);
    expect(good.body.data.mission.deadline).toBe('2031-05-01T00:00:00.000Z');
  });
});

describe('playbook files', () => {
  const byName = async (): Promise<Record<string, any>> => Object.fromEntries((await d.api('GET', P)).body.data.map((p: any) => [p.name, p]));

  it('lists files beside API playbooks, invalid ones with their error', async () => {
    const all = await byName();
    expect(all.nightly).toMatchObject({
      source: 'file',
      file: 'playbooks/nightly/playbook.json',
      error: null,
      description: 'nightly checks',
      parameters: NIGHTLY.parameters,
      mission: NIGHTLY.mission,
    });
    expect(all.broken).toMatchObject({ source: 'file', mission: null, error: expect.stringMatching(/not valid JSON/) });
    expect(all.misnamed.error).toMatch(/"other-name" does not match its folder "misnamed"/);
    expect(all['bad-template'].error).toMatch(/mission\.name: placeholder \{\{nope\}\} names no parameter/);
    expect(all.Not_Kebab.error).toMatch(/kebab-case/);
    expect(all['no-file-here']).toBeUndefined();
    expect(all.pair).toMatchObject({ source: 'api' });
    const names = Object.keys(all);
    expect(names).toEqual([...names].sort());
  });

  it('reads files on demand, and an API playbook wins a name clash until it is deleted', async () => {
    const body = { name: 'shadowed', description: 'from the api', mission: { name: 'api version' } };
    expect((await d.api('POST', P, { body })).status).toBe(201);
    writePlaybookFile('shadowed', { description: 'from the file', mission: { name: 'file version' } });
    writePlaybookFile('fresh', { mission: { name: 'fresh' } });

    let all = await byName();
    expect(all.shadowed).toMatchObject({ source: 'api', description: 'from the api' });
    expect(all.fresh).toMatchObject({ source: 'file', error: null });
    expect((await d.api('GET', `${P}/shadowed`)).body.data.source).toBe('api');

    expect((await d.api('DELETE', `${P}/shadowed`)).status).toBe(200);
    all = await byName();
    expect(all.shadowed).toMatchObject({ source: 'file', description: 'from the file' });
    const run = await d.api('POST', `${P}/shadowed/run`, { body: { params: {} } });
    expect(run.status).toBe(201);
    expect(run.body.data.mission.name).toBe('file version');

    // An edit to the file is seen by the next request.
    writePlaybookFile('fresh', '{"mission": 1}');
    expect((await d.api('GET', `${P}/fresh`)).body.data.error).toMatch(/mission/);
  });

  it('never reads outside the playbooks folder', async () => {
    writeFileSync(join(d.root, 'playbook.json'), JSON.stringify({ mission: { name: 'outside' } }));
    // Slashes encoded, so that the name reaches the service whole.
    for (const name of ['%2e%2e%2F%2e%2e', 'nightly%2F%2e%2e', '%2e%2e%2Fplaybooks%2Fnightly']) {
      const res = await d.api('GET', `${P}/${name}`);
      expect(res.status, name).toBe(404);
    }
  });
});

describe('svc playbooks (CLI)', () => {
  const svc = async (...args: string[]) => await svcAgainst(d, args);

  it('adds from YAML, lists, shows, runs with -p and removes', async () => {
    const file = join(d.root, 'cli-train.yaml');
    writeFileSync(
      file,
      [
        'description: from the CLI',
        'parameters:',
        '  - {name: version, type: string, required: true}',
        '  - {name: retries, type: number, default: 1}',
        '  - {name: urgent, type: boolean, default: false}',
        'mission:',
        '  name: "cli {{version}}"',
        '  tasks:',
        '    - {title: "ship {{version}}", maxRetries: "{{retries}}"}',
        '',
      ].join('\n'),
    );
    const add = await svc('playbooks', 'add', file);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain('created playbook cli-train');

    const ls = await svc('playbooks', 'ls');
    expect(ls.stdout).toMatch(/^NAME\s+SOURCE\s+PARAMETERS\s+DESCRIPTION/);
    expect(ls.stdout).toMatch(/cli-train\s+api\s+version\*, retries, urgent\s+from the CLI/);
    expect(ls.stdout).toMatch(/broken\s+file\s+-\s+invalid: /);

    const show = await svc('playbooks', 'show', 'cli-train');
    expect(show.stdout).toMatch(/retries\s+number\s+no\s+1/);

    const runJson = await svc('playbooks', 'run', 'cli-train', '-p', 'version=9.9', '-p', 'retries=4', '-p', 'urgent=true', '--json');
    expect(runJson.code, runJson.stderr).toBe(0);
    const r = JSON.parse(runJson.stdout);
    expect(r.mission).toMatchObject({ name: 'cli 9.9', status: 'draft' });
    expect(r.tasks).toMatchObject([{ title: 'ship 9.9', maxRetries: 4 }]);

    const runTable = await svc('playbooks', 'run', 'cli-train', '-p', 'version=1');
    expect(runTable.stdout).toMatch(/created mission \S+ \(draft\) from cli-train: draft 1/);

    const badNumber = await svc('playbooks', 'run', 'cli-train', '-p', 'version=1', '-p', 'retries=lots');
    expect(badNumber.code).toBe(2);
    const missing = await svc('playbooks', 'run', 'cli-train');
    expect(missing.code).toBe(1);
    // The parameter is named as typed (-p version=…), not by its place in the request body.
    expect(missing.stderr).toContain('--param version: required string parameter is missing');

    const rm = await svc('playbooks', 'rm', 'cli-train', '--yes');
    expect(rm.code, rm.stderr).toBe(0);
    expect((await d.api('GET', `${P}/cli-train`)).status).toBe(404);
  });
});
