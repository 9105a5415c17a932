import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import type { App } from '../../app.js';
import { AppError } from '../../kernel/errors.js';
import { listAgents, requireAgent, setAgentSkills } from '../agents/service.js';
import { skillIndex } from './live-index.js';
import { renderSkillFile } from './parse.js';
import { readSkill, SKILL_FILE, type IndexedSkill } from './scan.js';
import type { Skill, SkillDetail, SkillInput } from './schema.js';

/** Which agents hold each skill. Agents own the assignment (their `skills` list); skills only read it. */
async function assignments(app: App): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const a of await listAgents(app.db)) {
    for (const s of a.skills) out.set(s, [...(out.get(s) ?? []), a.name]);
  }
  return out;
}

function displayPath(app: App, file: string): string {
  const rel = relative(app.root, file);
  return rel.startsWith('..') || isAbsolute(rel) ? file : rel.split(sep).join('/');
}

function toSkill(app: App, s: IndexedSkill, assignedTo: string[]): Skill {
  const out: Skill = {
    name: s.name,
    description: s.description,
    allowedTools: s.allowedTools,
    path: displayPath(app, s.file),
    assignedTo,
    updatedAt: s.updatedAt,
  };
  if (s.error) out.error = s.error;
  return out;
}

function toDetail(app: App, s: IndexedSkill, assignedTo: string[]): SkillDetail {
  return { ...toSkill(app, s, assignedTo), content: s.content, frontMatter: s.frontMatter };
}

function requireSkill(app: App, name: string): IndexedSkill {
  const s = skillIndex(app).get(name);
  if (!s) throw new AppError('not_found', `Skill "${name}" not found.`);
  return s;
}

export async function listSkills(app: App): Promise<Skill[]> {
  const held = await assignments(app);
  return skillIndex(app)
    .list()
    .map((s) => toSkill(app, s, held.get(s.name) ?? []));
}

export async function getSkill(app: App, name: string): Promise<SkillDetail> {
  const s = requireSkill(app, name);
  return toDetail(app, s, (await assignments(app)).get(name) ?? []);
}

export async function createSkill(app: App, input: SkillInput): Promise<SkillDetail> {
  const index = skillIndex(app);
  const dir = join(index.dir, input.name);
  return await app.events.write(async () => {
    // A folder without SKILL.md is not listed but is still in the way.
    if (index.get(input.name) || existsSync(dir)) throw new AppError('conflict', `Skill "${input.name}" already exists.`);
    mkdirSync(index.dir, { recursive: true });
    mkdirSync(dir);
    const file = join(dir, SKILL_FILE);
    let skill: IndexedSkill | null;
    try {
      // Written whole then renamed, so the watcher (or an agent tool) never reads half a file.
      const tmp = join(dir, `.${SKILL_FILE}.${process.pid}.tmp`);
      writeFileSync(tmp, renderSkillFile(input));
      renameSync(tmp, file);
      skill = readSkill(dir, input.name);
      if (!skill) throw new Error(`${file} vanished right after it was written`);
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    app.events.emit('skill:created', { name: input.name });
    index.set(skill);
    return toDetail(app, skill, []);
  });
}

/** Removes the folder and unassigns the skill from every agent, in one transaction. */
export async function removeSkill(app: App, name: string): Promise<void> {
  const index = skillIndex(app);
  await app.events.write(async () => {
    const skill = requireSkill(app, name);
    for (const agent of (await assignments(app)).get(name) ?? []) {
      await setAgentSkills(
        app,
        agent,
        (await requireAgent(app, agent)).skills.filter((s) => s !== name),
      );
      app.events.emit('skill:unassigned', { skill: name, agent });
    }
    // Last, so a failure above leaves the files alone; a failure here rolls the unassignments back.
    rmSync(skill.dir, { recursive: true, force: true });
    app.events.emit('skill:removed', { name });
    index.delete(name);
  });
}

/** Assigning twice changes nothing and emits nothing. */
export async function assignSkill(app: App, skill: string, agent: string): Promise<{ skill: string; agent: string }> {
  return await app.events.write(async () => {
    requireSkill(app, skill);
    const current = (await requireAgent(app, agent)).skills;
    if (!current.includes(skill)) {
      await setAgentSkills(app, agent, [...current, skill]);
      app.events.emit('skill:assigned', { skill, agent });
    }
    return { skill, agent };
  });
}

/**
 * Unassigning what is not assigned changes nothing. A skill whose folder has gone (another git
 * branch, say) can still be unassigned from an agent that holds it; otherwise an unknown skill is 404.
 */
export async function unassignSkill(app: App, skill: string, agent: string): Promise<{ skill: string; agent: string }> {
  return await app.events.write(async () => {
    const current = (await requireAgent(app, agent)).skills;
    if (!current.includes(skill)) {
      requireSkill(app, skill);
      return { skill, agent };
    }
    await setAgentSkills(
      app,
      agent,
      current.filter((s) => s !== skill),
    );
    app.events.emit('skill:unassigned', { skill, agent });
    return { skill, agent };
  });
}
