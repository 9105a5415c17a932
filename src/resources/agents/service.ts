import { serviceKey, type App } from '../../app.js';
import { lockKey } from '../../db/open.js';
import { AppError } from '../../kernel/errors.js';
import { nowIso } from '../../lib/time.js';
import { teamExists } from '../teams/service.js';
import type { Runtime } from './runtime.js';
import type { Agent, AgentFieldName, AgentFields, AgentInput, AgentPatchInput } from './schema.js';
import { MAX_LIST_ITEMS } from './values.js';
import * as store from './store.js';

export { agentExists, getAgent, listAgents } from './store.js';

export async function requireAgent(app: App, name: string): Promise<Agent> {
  // In a write: what the caller checks and then writes stays as read until it commits (lockKey).
  await lockKey(app.db, 'agent', name);
  const agent = await store.getAgent(app.db, name);
  if (!agent) throw new AppError('not_found', `Agent "${name}" not found.`);
  return agent;
}

/** The references an agent holds must point at things that exist and must not loop. */
async function checkReferences(app: App, name: string, fields: AgentFields): Promise<void> {
  if (fields.team !== undefined && !(await teamExists(app.db, fields.team))) {
    const message = `team "${fields.team}" does not exist; create it with POST /api/v1/agents/teams {"name": ${JSON.stringify(fields.team)}}`;
    throw new AppError('unprocessable', `team: ${message}.`, { details: [{ path: 'body.team', message }] });
  }
  if (fields.reportsTo === undefined) return;
  const chain = [name];
  let next: string | null | undefined = fields.reportsTo;
  while (next) {
    if (next === name) {
      chain.push(next);
      throw new AppError('unprocessable', `reportsTo: this would form a cycle: ${chain.join(' → ')}.`, {
        details: [{ path: 'body.reportsTo', message: `forms a cycle: ${chain.join(' → ')}` }],
      });
    }
    const parent = await store.reportsToOf(app.db, next);
    if (parent === undefined) {
      throw new AppError('unprocessable', `reportsTo: agent "${next}" does not exist.`, {
        details: [{ path: 'body.reportsTo', message: `agent "${next}" does not exist` }],
      });
    }
    chain.push(next);
    next = parent;
  }
}

/**
 * Checks that a runtime can run here (its executable found, its vault references naming keys of
 * this agent's entries), throwing a 422 that says what is missing. The runs resource answers;
 * the runs' wire() provides it (runs already depend on agents, so agents may not import runs back).
 * Asynchronous: looking for an executable reads the disk, which never holds the event loop.
 */
export const RUNTIME_CHECK = serviceKey<(app: App, agent: string, runtime: Runtime, path: string) => Promise<void>>('agents.runtimeCheck');

const checkRuntime = (app: App, name: string, runtime: Runtime) => app.services.get(RUNTIME_CHECK)(app, name, runtime, 'body.runtime');

export async function createAgent(app: App, input: AgentInput): Promise<Agent> {
  if (await store.agentExists(app.db, input.name)) throw new AppError('conflict', `Agent "${input.name}" already exists.`);
  if (input.runtime) await checkRuntime(app, input.name, input.runtime);
  return await app.events.write(async () => {
    const { name, ...fields } = input;
    // Two creations of one name, on two daemons: the second finds the first (lockKey).
    await lockKey(app.db, 'agent', name);
    if (await store.agentExists(app.db, name)) throw new AppError('conflict', `Agent "${name}" already exists.`);
    await checkReferences(app, name, fields);
    await store.insertAgent(app.db, name, fields, nowIso(app.clock));
    app.events.emit('agent:created', { name });
    return (await store.getAgent(app.db, name))!;
  });
}

export async function updateAgent(app: App, name: string, patch: AgentPatchInput): Promise<void> {
  if (patch.runtime) await checkRuntime(app, name, patch.runtime);
  await app.events.write(async () => {
    const current = await requireAgent(app, name);
    const merged: AgentFields = fieldsOf(current);
    const changed: string[] = [];
    for (const [k, v] of Object.entries(patch) as [AgentFieldName, unknown][]) {
      if (v === undefined) continue;
      changed.push(k);
      if (v === null) delete merged[k];
      else (merged as Record<string, unknown>)[k] = v;
    }
    if (!changed.length) return;
    await checkReferences(app, name, {
      team: patch.team ?? undefined,
      reportsTo: patch.reportsTo ?? undefined,
    });
    await store.replaceAgentFields(app.db, name, merged, nowIso(app.clock));
    app.events.emit('agent:updated', { name, fields: changed });
  });
}

export async function removeAgent(app: App, name: string): Promise<void> {
  await app.events.write(async () => {
    await requireAgent(app, name);
    const reports = await store.namesReportingTo(app.db, name);
    if (reports.length) {
      throw new AppError('conflict', `Agent "${name}" cannot be removed while agents report to it: ${reports.join(', ')}.`);
    }
    await store.deleteAgent(app.db, name);
    app.events.emit('agent:removed', { name });
  });
}

/** The stored (non-default) fields of an agent, as a patch base. */
function fieldsOf(agent: Agent): AgentFields {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(agent)) {
    if (k === 'name' || k === 'createdAt' || k === 'updatedAt') continue;
    if (v === null || (Array.isArray(v) && v.length === 0)) continue;
    out[k] = v;
  }
  return out as AgentFields;
}

/**
 * Adds `tool` to an agent's allowedTools unless it is there, inside the caller's
 * app.events.write() (an "always allow" permission approval), with agent:updated when it changed.
 */
export async function allowTool(app: App, name: string, tool: string): Promise<void> {
  const fields = fieldsOf(await requireAgent(app, name));
  const tools = fields.allowedTools ?? [];
  if (tools.includes(tool)) return;
  if (tools.length >= MAX_LIST_ITEMS) throw new AppError('unprocessable', `Agent "${name}" already allows ${tools.length} tools, the most it may; remove some first.`);
  fields.allowedTools = [...tools, tool];
  await store.replaceAgentFields(app.db, name, fields, nowIso(app.clock));
  app.events.emit('agent:updated', { name, fields: ['allowedTools'] });
}

/** Names of agents in a team: how the teams resource learns whether a team is in use. */
export const agentsInTeam = async (app: App, team: string): Promise<string[]> => await store.namesInTeam(app.db, team);

/**
 * Replaces an agent's skills list, inside the caller's app.events.write(). It emits nothing: the
 * skills resource describes the change as skill:assigned / skill:unassigned.
 */
export async function setAgentSkills(app: App, name: string, skills: string[]): Promise<void> {
  const fields = fieldsOf(await requireAgent(app, name));
  if (skills.length) fields.skills = skills;
  else delete fields.skills;
  await store.replaceAgentFields(app.db, name, fields, nowIso(app.clock));
}
