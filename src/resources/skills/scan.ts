import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseSkillFile, type ParsedSkill } from './parse.js';

export const SKILL_FILE = 'SKILL.md';
// Skills are prompts: anything this big is a mistake, and the index keeps every body in memory.
const MAX_SKILL_BYTES = 1024 * 1024;

export interface IndexedSkill extends ParsedSkill {
  /** The folder name, which is the skill's name even when the front matter says otherwise. */
  name: string;
  dir: string;
  file: string;
  /** SKILL.md's modification time. */
  updatedAt: string;
}

/** Reads one skill folder; null when it holds no SKILL.md (then it is not a skill). */
export function readSkill(dir: string, name: string): IndexedSkill | null {
  const file = join(dir, SKILL_FILE);
  let st;
  try {
    st = statSync(file);
  } catch {
    return null;
  }
  if (!st.isFile()) return null;
  const base = { name, dir, file, updatedAt: st.mtime.toISOString() };
  const broken = (error: string): IndexedSkill => ({ ...base, description: null, allowedTools: [], frontMatter: {}, content: '', error });
  if (st.size > MAX_SKILL_BYTES) return broken(`SKILL.md is larger than 1 MiB (${st.size} bytes)`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return broken(`SKILL.md cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return { ...base, ...parseSkillFile(text, name) };
}

/** Every skill folder directly under `skillsDir`. A missing folder simply holds no skills. */
export function scanSkills(skillsDir: string): Map<string, IndexedSkill> {
  const out = new Map<string, IndexedSkill>();
  let entries: string[];
  try {
    entries = readdirSync(skillsDir);
  } catch {
    return out;
  }
  for (const name of entries.sort()) {
    if (name.startsWith('.')) continue; // .git, editor swap folders, our own temp files
    const dir = join(skillsDir, name);
    try {
      if (!statSync(dir).isDirectory()) continue;
    } catch {
      continue;
    }
    const skill = readSkill(dir, name);
    if (skill) out.set(name, skill);
  }
  return out;
}
