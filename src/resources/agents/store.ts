import { stmt, type DB } from '../../db/open.js';
import { LIST_FIELDS, type Agent, type AgentFields } from './schema.js';

interface Row {
  name: string;
  team: string | null;
  reports_to: string | null;
  fields: string;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'name, team, reports_to, fields, created_at, updated_at';

export function toAgent(r: Row): Agent {
  const f = JSON.parse(r.fields) as AgentFields;
  const out: Agent = {
    name: r.name,
    role: f.role ?? null,
    model: f.model ?? null,
    allowedTools: [],
    allowedPaths: [],
    systemPrompt: f.systemPrompt ?? null,
    skills: [],
    maxTurns: f.maxTurns ?? null,
    maxConcurrency: f.maxConcurrency ?? null,
    identity: f.identity ?? null,
    reportsTo: r.reports_to,
    reasoning: f.reasoning ?? null,
    assignedLoops: [],
    defaultLoop: f.defaultLoop ?? null,
    browserProfile: f.browserProfile ?? null,
    emailAllowedDomains: [],
    team: r.team,
    runtime: f.runtime ?? null,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
  for (const k of LIST_FIELDS) (out[k] as string[]) = (f[k] as string[] | undefined) ?? [];
  return out;
}

/** team and reportsTo live in their own columns (foreign keys); the rest is one JSON object. */
function split(fields: AgentFields): { team: string | null; reportsTo: string | null; rest: string } {
  const { team, reportsTo, ...rest } = fields;
  return { team: team ?? null, reportsTo: reportsTo ?? null, rest: JSON.stringify(rest) };
}

export async function getAgent(db: DB, name: string): Promise<Agent | null> {
  const r = (await stmt(db, `SELECT ${COLUMNS} FROM agents WHERE name = ?`).get(name)) as Row | undefined;
  return r ? toAgent(r) : null;
}

export async function listAgents(db: DB, filter: { team?: string } = {}): Promise<Agent[]> {
  const rows = filter.team ? await stmt(db, `SELECT ${COLUMNS} FROM agents WHERE team = ? ORDER BY name`).all(filter.team) : await stmt(db, `SELECT ${COLUMNS} FROM agents ORDER BY name`).all();
  return (rows as Row[]).map(toAgent);
}

export async function insertAgent(db: DB, name: string, fields: AgentFields, now: string): Promise<void> {
  const s = split(fields);
  await stmt(db, `INSERT INTO agents (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`).run(name, s.team, s.reportsTo, s.rest, now, now);
}

export async function replaceAgentFields(db: DB, name: string, fields: AgentFields, now: string): Promise<void> {
  const s = split(fields);
  await stmt(db, 'UPDATE agents SET team = ?, reports_to = ?, fields = ?, updated_at = ? WHERE name = ?').run(s.team, s.reportsTo, s.rest, now, name);
}

export async function deleteAgent(db: DB, name: string): Promise<boolean> {
  return (await stmt(db, 'DELETE FROM agents WHERE name = ?').run(name)).changes > 0;
}

export async function reportsToOf(db: DB, name: string): Promise<string | null | undefined> {
  const r = (await stmt(db, 'SELECT reports_to FROM agents WHERE name = ?').get(name)) as { reports_to: string | null } | undefined;
  return r ? r.reports_to : undefined;
}

export async function namesReportingTo(db: DB, name: string): Promise<string[]> {
  return ((await stmt(db, 'SELECT name FROM agents WHERE reports_to = ? ORDER BY name').all(name)) as { name: string }[]).map((r) => r.name);
}

export async function namesInTeam(db: DB, team: string): Promise<string[]> {
  return ((await stmt(db, 'SELECT name FROM agents WHERE team = ? ORDER BY name').all(team)) as { name: string }[]).map((r) => r.name);
}

export async function agentExists(db: DB, name: string): Promise<boolean> {
  return (await stmt(db, 'SELECT 1 FROM agents WHERE name = ?').get(name)) !== undefined;
}
