import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { issueMessage } from '../lib/issue-message.js';
import { parseJson } from '../lib/json.js';
import { KNOWN_TOP_LEVEL, ProjectConfigSchema, type ProjectConfig } from './schema.js';
import { CONFIG_FILE } from './find.js';

export { CONFIG_FILE, findProjectRoot } from './find.js';

export type LoadResult = { ok: true; config: ProjectConfig; warnings: string[] } | { ok: false; issues: { path: string; message: string }[] };

/** Parses and validates project.json text; never throws. */
export function parseConfig(text: string, root: string): LoadResult {
  const parsed = parseJson(text);
  if (!parsed.ok) return { ok: false, issues: [{ path: '(file)', message: parsed.error }] };
  const raw = parsed.value;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, issues: [{ path: '(file)', message: 'project.json must hold a JSON object' }] };
  }
  const r = ProjectConfigSchema.safeParse(raw);
  if (!r.success) {
    return {
      ok: false,
      issues: r.error.issues.map((i) => ({
        path: i.path.length ? i.path.join('.') : '(root)',
        message: i.code === 'unrecognized_keys' ? `unknown keys: ${i.keys.join(', ')}` : issueMessage(i),
      })),
    };
  }
  const warnings = Object.keys(raw)
    .filter((k) => !KNOWN_TOP_LEVEL.includes(k))
    .map((k) => `unknown top-level key "${k}" is ignored`);
  const config = { ...r.data, name: r.data.name ?? basename(root) };
  return { ok: true, config, warnings };
}

export function loadConfig(root: string): LoadResult {
  let text: string;
  try {
    text = readFileSync(join(root, CONFIG_FILE), 'utf8');
  } catch (err) {
    return { ok: false, issues: [{ path: '(file)', message: `cannot read ${CONFIG_FILE}: ${(err as Error).message}` }] };
  }
  return parseConfig(text, root);
}

export function formatIssues(issues: { path: string; message: string }[]): string {
  return issues.map((i) => `${i.path}: ${i.message}`).join('; ');
}
