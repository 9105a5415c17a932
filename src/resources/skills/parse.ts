import { parseDocument, stringify } from 'yaml';
import { SKILL_NAME_RE } from './schema.js';

// SKILL.md: YAML front matter between two `---` lines, then a Markdown body. The same convention
// agent tools already read, so a skill written here works there and the other way round.

// Defined beside the API schema, so that the CLI can check names without loading the YAML parser.
export { SKILL_NAME_RE };

export interface ParsedSkill {
  description: string | null;
  allowedTools: string[];
  /** Every front matter field as written (JSON-safe), including ones svc does not use. */
  frontMatter: Record<string, unknown>;
  content: string;
  /** What is wrong with the file; absent when the skill is valid. */
  error?: string;
}

const OPEN = /^\uFEFF?---[ \t]*\r?\n/;
const CLOSE = /^---[ \t]*(?:\r?\n|$)/m;

/** Parses a SKILL.md found in folder `folder`. Never throws: problems become `error`. */
export function parseSkillFile(text: string, folder: string): ParsedSkill {
  const problems: string[] = [];
  if (!SKILL_NAME_RE.test(folder)) problems.push(`folder name "${folder}" is not a valid skill name (lowercase letters, digits and "-", at most 64)`);
  const result: ParsedSkill = { description: null, allowedTools: [], frontMatter: {}, content: text };
  const done = () => (problems.length ? { ...result, error: problems.join('; ') } : result);

  const open = OPEN.exec(text);
  if (!open) {
    problems.push('no YAML front matter: SKILL.md must start with a "---" line');
    return done();
  }
  const rest = text.slice(open[0].length);
  const close = CLOSE.exec(rest);
  if (!close) {
    problems.push('the front matter is not closed by a "---" line');
    return done();
  }
  // The blank line between front matter and body is layout, not content.
  result.content = rest.slice(close.index + close[0].length).replace(/^\r?\n/, '');

  const doc = parseDocument(rest.slice(0, close.index));
  if (doc.errors.length) {
    problems.push(`the front matter is not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
    return done();
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    problems.push(`the front matter is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    return done();
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    problems.push('the front matter must be a YAML mapping with name and description');
    return done();
  }
  result.frontMatter = JSON.parse(JSON.stringify(data)) as Record<string, unknown>;
  const fm = data as Record<string, unknown>;

  if (typeof fm.name !== 'string' || !fm.name) problems.push('front matter field "name" is missing or not a string');
  else if (fm.name !== folder) problems.push(`front matter name "${fm.name}" does not match the folder name "${folder}"`);

  if (typeof fm.description === 'string' && fm.description.trim()) result.description = fm.description;
  else problems.push('front matter field "description" is missing or empty');

  const tools = fm['allowed-tools'];
  if (typeof tools === 'string') result.allowedTools = splitTools(tools);
  else if (Array.isArray(tools) && tools.every((t) => typeof t === 'string')) result.allowedTools = tools.map((t) => t.trim()).filter(Boolean);
  else if (tools !== undefined && tools !== null) problems.push('front matter field "allowed-tools" must be a comma-separated string or a list of strings');

  return done();
}

const splitTools = (s: string): string[] =>
  s
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);

export interface SkillSource {
  name: string;
  description: string;
  allowedTools?: string[];
  content: string;
}

/** The SKILL.md text for a skill; parseSkillFile reads back exactly what was given. */
export function renderSkillFile(s: SkillSource): string {
  const fm: Record<string, unknown> = { name: s.name, description: s.description };
  const tools = s.allowedTools ?? [];
  if (tools.length) {
    // The comma-separated form is what agent tools write by hand; a list keeps tools that would not survive it.
    const plain = tools.every((t) => !t.includes(',') && t === t.trim() && t !== '');
    fm['allowed-tools'] = plain ? tools.join(', ') : tools;
  }
  return `---\n${stringify(fm, { lineWidth: 0 })}---\n\n${s.content}`;
}
