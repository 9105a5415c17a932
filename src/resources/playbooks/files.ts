import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ErrorDetail } from '../../kernel/errors.js';
import { zodDetails } from '../../kernel/server.js';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../../lib/json.js';
import { PlaybookFile, PlaybookName, type Parameter } from './schema.js';
import { checkTemplate } from './template.js';

// Playbooks kept in git: <root>/playbooks/<name>/playbook.json, read on demand (no watcher: a
// request reads the files it needs, so an edit is seen by the next request).

export const PLAYBOOKS_DIR = 'playbooks';
export const PLAYBOOK_FILE = 'playbook.json';
const MAX_FILE_BYTES = 1024 * 1024;
// A folder name that cannot climb out of the playbooks folder; other names are never looked up.
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export interface FilePlaybook {
  name: string;
  /** Relative to the project root, with "/" separators. */
  file: string;
  description: string | null;
  parameters: Parameter[];
  mission: Record<string, unknown> | null;
  /** Why the file is not a valid playbook; null when it is. */
  error: string | null;
  mtime: string;
}

const summary = (details: ErrorDetail[]) => details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join('; ');

/** Reads playbooks/<name>/playbook.json; null when there is no such file (then there is no such playbook). */
export function readPlaybookFile(root: string, name: string): FilePlaybook | null {
  return SAFE_NAME.test(name) ? readFolder(root, name) : null;
}

/** `name` is a directory entry here, never a path from a request. */
function readFolder(root: string, name: string): FilePlaybook | null {
  const path = join(root, PLAYBOOKS_DIR, name, PLAYBOOK_FILE);
  let st;
  try {
    st = statSync(path);
  } catch {
    return null;
  }
  if (!st.isFile()) return null;
  const base = { name, file: `${PLAYBOOKS_DIR}/${name}/${PLAYBOOK_FILE}`, mtime: st.mtime.toISOString() };
  const broken = (error: string, found: Partial<FilePlaybook> = {}): FilePlaybook => ({ description: null, parameters: [], mission: null, ...found, ...base, error });
  if (st.size > MAX_FILE_BYTES) return broken(`${PLAYBOOK_FILE} is larger than 1 MiB (${st.size} bytes)`);
  let raw: unknown;
  try {
    const text = readFileSync(path, 'utf8');
    // The same bound as request bodies: a file nested thousands deep would overflow the checks' stack.
    if (nestedDeeperThan(text, MAX_JSON_DEPTH)) return broken(`${PLAYBOOK_FILE} nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
    raw = JSON.parse(text);
  } catch (err) {
    return broken(`${PLAYBOOK_FILE} is not valid JSON (${(err as Error).message})`);
  }
  const folder = PlaybookName.safeParse(name);
  if (!folder.success) return broken(`folder name "${name}" ${folder.error.issues[0]!.message}`);
  const r = PlaybookFile.safeParse(raw);
  if (!r.success) return broken(summary(zodDetails('', r.error).map((d) => ({ ...d, path: d.path.slice(1) }))));
  const p = r.data;
  const found = { description: p.description ?? null, parameters: p.parameters, mission: p.mission };
  if (p.name !== undefined && p.name !== name) return broken(`name "${p.name}" does not match its folder "${name}"`, found);
  const template = checkTemplate(p.mission, p.parameters, 'mission');
  if (template.length) return broken(summary(template), found);
  return { ...found, ...base, error: null };
}

/** Every playbook folder, by name; a missing playbooks folder holds none. */
export function scanPlaybookFiles(root: string): FilePlaybook[] {
  let names: string[];
  try {
    names = readdirSync(join(root, PLAYBOOKS_DIR));
  } catch {
    return [];
  }
  return names
    .filter((n) => !n.startsWith('.'))
    .sort()
    .map((n) => readFolder(root, n))
    .filter((p): p is FilePlaybook => p !== null);
}
