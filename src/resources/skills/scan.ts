import { closeSync, constants, lstatSync, openSync, readdirSync, readFileSync } from 'node:fs';
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

/** A skill that is listed, with what is wrong, but whose content is not served. */
function brokenSkill(base: Pick<IndexedSkill, 'name' | 'dir' | 'file' | 'updatedAt'>, error: string): IndexedSkill {
  return { ...base, description: null, allowedTools: [], frontMatter: {}, content: '', error };
}

/**
 * Reads one skill folder; null when it holds no SKILL.md (then it is not a skill). Links are never
 * followed: a SKILL.md (or a skill folder) that is a symbolic link could point at any file the
 * daemon can read (its environment, the vault key file) and serve it over the API and to models,
 * so it is listed with an error instead.
 */
export function readSkill(dir: string, name: string): IndexedSkill | null {
  const file = join(dir, SKILL_FILE);
  let st;
  try {
    st = lstatSync(file);
  } catch {
    return null;
  }
  const base = { name, dir, file, updatedAt: st.mtime.toISOString() };
  const broken = (error: string) => brokenSkill(base, error);
  if (st.isSymbolicLink()) return broken('SKILL.md is a symbolic link; only regular files are read');
  if (!st.isFile()) return null;
  if (st.size > MAX_SKILL_BYTES) return broken(`SKILL.md is larger than 1 MiB (${st.size} bytes)`);
  let text: string;
  try {
    // O_NOFOLLOW: a link swapped in after the check above is refused, not followed.
    const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
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
    let st;
    try {
      st = lstatSync(dir);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) {
      const base = { name, dir, file: join(dir, SKILL_FILE), updatedAt: st.mtime.toISOString() };
      out.set(name, brokenSkill(base, 'the skill folder is a symbolic link; only real folders are read'));
      continue;
    }
    if (!st.isDirectory()) continue;
    const skill = readSkill(dir, name);
    if (skill) out.set(name, skill);
  }
  return out;
}
