import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from './harness.js';
import { runCase, type ApiCase } from './scenarios.js';

let d: TestDaemon;
beforeAll(async () => {
  d = await startTestDaemon();
});
afterAll(async () => {
  await d.close();
});

// Order matters: each case runs against the state the previous ones left.
const cases: ApiCase[] = [
  {
    name: 'add team',
    method: 'POST',
    path: '/api/v1/agents/teams',
    body: { name: 'core', description: 'Core team' },
    status: 201,
    data: { added: true },
    events: [{ name: 'team:created', data: { name: 'core' } }],
  },
  { name: 'team description optional', method: 'POST', path: '/api/v1/agents/teams', body: { name: 'ops' }, status: 201, data: { added: true }, events: [{ name: 'team:created' }] },
  { name: 'duplicate team', method: 'POST', path: '/api/v1/agents/teams', body: { name: 'core', description: 'again' }, status: 409, code: 'conflict', events: [] },
  {
    name: 'create lead',
    method: 'POST',
    path: '/api/v1/agents',
    body: { name: 'lead', role: 'lead', team: 'core', reasoning: 'high', maxTurns: 10, maxConcurrency: 2 },
    status: 201,
    events: [{ name: 'agent:created', data: { name: 'lead' } }],
  },
  {
    name: 'create dev reporting to lead',
    method: 'POST',
    path: '/api/v1/agents',
    body: { name: 'dev', reportsTo: 'lead', team: 'core', identity: { displayName: 'Dev', responsibilities: ['code'], socials: { gh: 'dev' } } },
    status: 201,
    events: [{ name: 'agent:created' }],
  },
  { name: 'duplicate agent', method: 'POST', path: '/api/v1/agents', body: { name: 'dev' }, status: 409, code: 'conflict', events: [] },
  { name: 'maxTurns 0', method: 'POST', path: '/api/v1/agents', body: { name: 'x', maxTurns: 0 }, status: 400, code: 'invalid_request', detailPath: 'body.maxTurns', events: [] },
  {
    name: 'maxConcurrency negative',
    method: 'POST',
    path: '/api/v1/agents',
    body: { name: 'x', maxConcurrency: -1 },
    status: 400,
    code: 'invalid_request',
    detailPath: 'body.maxConcurrency',
    events: [],
  },
  { name: 'maxTurns not integer', method: 'POST', path: '/api/v1/agents', body: { name: 'x', maxTurns: 1.5 }, status: 400, code: 'invalid_request', detailPath: 'body.maxTurns', events: [] },
  { name: 'reasoning enum', method: 'POST', path: '/api/v1/agents', body: { name: 'x', reasoning: 'extreme' }, status: 400, code: 'invalid_request', detailPath: 'body.reasoning', events: [] },
  { name: 'unknown property', method: 'POST', path: '/api/v1/agents', body: { name: 'x', colour: 'blue' }, status: 400, code: 'invalid_request', detailPath: 'body.colour', events: [] },
  {
    name: 'unknown identity property',
    method: 'POST',
    path: '/api/v1/agents',
    body: { name: 'x', identity: { nickname: 'y' } },
    status: 400,
    code: 'invalid_request',
    detailPath: 'body.identity.nickname',
    events: [],
  },
  { name: 'name missing', method: 'POST', path: '/api/v1/agents', body: { role: 'x' }, status: 400, code: 'invalid_request', detailPath: 'body.name', events: [] },
  { name: 'reserved name', method: 'POST', path: '/api/v1/agents', body: { name: 'teams' }, status: 400, code: 'invalid_request', detailPath: 'body.name', events: [] },
  { name: 'unknown team', method: 'POST', path: '/api/v1/agents', body: { name: 'x', team: 'nope' }, status: 422, code: 'unprocessable', detailPath: 'body.team', events: [] },
  { name: 'unknown reportsTo', method: 'POST', path: '/api/v1/agents', body: { name: 'x', reportsTo: 'ghost' }, status: 422, code: 'unprocessable', detailPath: 'body.reportsTo', events: [] },
  { name: 'reportsTo self', method: 'POST', path: '/api/v1/agents', body: { name: 'x', reportsTo: 'x' }, status: 422, code: 'unprocessable', events: [] },
  { name: 'cycle through patch', method: 'PATCH', path: '/api/v1/agents/lead', body: { reportsTo: 'dev' }, status: 422, code: 'unprocessable', detailPath: 'body.reportsTo', events: [] },
  {
    name: 'patch returns null',
    method: 'PATCH',
    path: '/api/v1/agents/dev',
    body: { model: 'openai/gpt-4o', maxTurns: 5 },
    status: 200,
    data: null,
    events: [{ name: 'agent:updated', data: { name: 'dev', fields: ['model', 'maxTurns'] } }],
  },
  { name: 'patch maxTurns 0', method: 'PATCH', path: '/api/v1/agents/dev', body: { maxTurns: 0 }, status: 400, code: 'invalid_request', detailPath: 'body.maxTurns', events: [] },
  { name: 'patch unknown team', method: 'PATCH', path: '/api/v1/agents/dev', body: { team: 'nope' }, status: 422, code: 'unprocessable', events: [] },
  { name: 'patch unknown agent', method: 'PATCH', path: '/api/v1/agents/ghost', body: { role: 'x' }, status: 404, code: 'not_found', events: [] },
  { name: 'patch with empty body changes nothing', method: 'PATCH', path: '/api/v1/agents/dev', body: {}, status: 200, data: null, events: [] },
  {
    name: 'rename team',
    method: 'PATCH',
    path: '/api/v1/agents/team',
    body: { oldName: 'core', name: 'platform' },
    status: 200,
    data: null,
    events: [{ name: 'team:renamed', data: { oldName: 'core', name: 'platform' } }],
  },
  { name: 'rename missing team', method: 'PATCH', path: '/api/v1/agents/team', body: { oldName: 'core', name: 'x' }, status: 404, code: 'not_found', events: [] },
  { name: 'rename onto existing', method: 'PATCH', path: '/api/v1/agents/team', body: { oldName: 'platform', name: 'ops' }, status: 409, code: 'conflict', events: [] },
  { name: 'team in use', method: 'DELETE', path: '/api/v1/agents/teams/platform', status: 409, code: 'conflict', events: [] },
  { name: 'agent others report to', method: 'DELETE', path: '/api/v1/agents/lead', status: 409, code: 'conflict', events: [] },
  { name: 'remove dev', method: 'DELETE', path: '/api/v1/agents/dev', status: 200, data: { removed: true }, events: [{ name: 'agent:removed', data: { name: 'dev' } }] },
  { name: 'remove dev again', method: 'DELETE', path: '/api/v1/agents/dev', status: 404, code: 'not_found', events: [] },
  { name: 'remove empty team', method: 'DELETE', path: '/api/v1/agents/teams/ops', status: 200, data: { removed: true }, events: [{ name: 'team:removed', data: { name: 'ops' } }] },
];

describe('agents and teams', () => {
  it.each(cases.map((c, i) => [i, c.name, c] as const))('%i %s', async (_i, _n, c) => {
    await runCase(d, c);
  });

  it('agents follow a team rename', async () => {
    const res = await d.api('GET', '/api/v1/agents/lead');
    expect(res.body.data.team).toBe('platform');
    const teams = await d.api('GET', '/api/v1/agents/teams');
    expect(teams.body.data).toEqual([expect.objectContaining({ name: 'platform', description: 'Core team', agents: ['lead'] })]);
  });

  it('shows an agent with every field of the reference', async () => {
    const full = {
      name: 'full',
      role: 'r',
      model: 'm',
      allowedTools: ['a'],
      allowedPaths: ['src/**'],
      systemPrompt: 's',
      skills: ['k'],
      maxTurns: 3,
      maxConcurrency: 1,
      identity: { displayName: 'F', tone: 't' },
      reasoning: 'low',
      assignedLoops: ['l'],
      defaultLoop: 'l',
      browserProfile: 'b',
      emailAllowedDomains: ['x.dev'],
      team: 'platform',
      reportsTo: 'lead',
    };
    await d.api('POST', '/api/v1/agents', { body: full });
    const res = await d.api('GET', '/api/v1/agents/full');
    expect(res.body.data).toMatchObject(full);
    expect(res.body.data.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('a patch with null clears a field and a missing field is kept', async () => {
    await d.api('PATCH', '/api/v1/agents/full', { body: { team: null, allowedTools: null } });
    const res = await d.api('GET', '/api/v1/agents/full');
    expect(res.body.data.team).toBeNull();
    expect(res.body.data.allowedTools).toEqual([]);
    expect(res.body.data.role).toBe('r');
  });

  it('lists agents by name and filters by team', async () => {
    const all = await d.api('GET', '/api/v1/agents');
    expect(all.body.data.map((a: { name: string }) => a.name)).toEqual(['full', 'lead']);
    const inTeam = await d.api('GET', '/api/v1/agents?team=platform');
    expect(inTeam.body.data.map((a: { name: string }) => a.name)).toEqual(['lead']);
  });
});
