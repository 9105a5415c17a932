// A run's work as the board shows it: git's unified diff (GET /runs/{id}/diff) split into files
// and their lines. Pure (no DOM): test/board-runs.test.ts reads patches with it.

export type DiffLineKind = 'hunk' | 'add' | 'del' | 'ctx' | 'note';
export interface DiffLine {
  kind: DiffLineKind;
  text: string;
}
export interface DiffFile {
  path: string;
  /** The path before a rename or copy; null otherwise. */
  from: string | null;
  change: 'added' | 'deleted' | 'renamed' | 'modified';
  binary: boolean;
  added: number;
  removed: number;
  lines: DiffLine[];
}

/** Git's quoting of an unusual path ("a/caf\303\251.txt"): C escapes and octal bytes, UTF-8. */
function unquote(path: string): string {
  if (!path.startsWith('"') || !path.endsWith('"')) return path;
  const bytes: number[] = [];
  const body = path.slice(1, -1);
  const named: Record<string, number> = { n: 10, t: 9, r: 13, b: 8, f: 12, a: 7, v: 11, '\\': 92, '"': 34 };
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      bytes.push(...new TextEncoder().encode(c));
      continue;
    }
    const oct = /^[0-7]{3}/.exec(body.slice(i + 1));
    if (oct) {
      bytes.push(parseInt(oct[0], 8));
      i += 3;
    } else {
      const n = body[i + 1] ?? '';
      bytes.push(Object.hasOwn(named, n) ? named[n]! : n.charCodeAt(0));
      i += 1;
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** "a/x" or "b/x" (git's prefixes) without the prefix; /dev/null stays null. */
const side = (p: string): string | null => {
  const s = unquote(p.trim());
  return s === '/dev/null' ? null : s.replace(/^[ab]\//, '');
};

/** The files of a unified diff in order, with their lines; a patch cut short ends wherever it was cut. */
export function parseDiff(patch: string): DiffFile[] {
  const files: DiffFile[] = [];
  let file: DiffFile | null = null;
  let inHunk = false;
  for (const line of patch.split('\n')) {
    if (line.startsWith('diff --git ')) {
      // The paths here are a fallback (a binary or mode-only change has no ---/+++ lines).
      const m = /^diff --git ("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*"|\S+)$/.exec(line);
      const path = m ? (side(m[2]!) ?? '') : line.slice(11);
      file = { path, from: null, change: 'modified', binary: false, added: 0, removed: 0, lines: [] };
      files.push(file);
      inHunk = false;
      continue;
    }
    if (!file) continue;
    if (line.startsWith('@@')) {
      inHunk = true;
      file.lines.push({ kind: 'hunk', text: line });
    } else if (inHunk && line.startsWith('+')) {
      file.added++;
      file.lines.push({ kind: 'add', text: line });
    } else if (inHunk && line.startsWith('-')) {
      file.removed++;
      file.lines.push({ kind: 'del', text: line });
    } else if (inHunk && line.startsWith(' ')) file.lines.push({ kind: 'ctx', text: line });
    else if (inHunk && line.startsWith('\\')) file.lines.push({ kind: 'note', text: line });
    else if (line.startsWith('new file mode')) file.change = 'added';
    else if (line.startsWith('deleted file mode')) file.change = 'deleted';
    else if (line.startsWith('rename from ') || line.startsWith('copy from ')) {
      file.from = unquote(line.replace(/^(rename|copy) from /, ''));
      file.change = 'renamed';
    } else if (line.startsWith('rename to ') || line.startsWith('copy to ')) file.path = unquote(line.replace(/^(rename|copy) to /, ''));
    else if (line.startsWith('Binary files ') || line === 'GIT binary patch') file.binary = true;
    else if (line.startsWith('--- ') && !inHunk) {
      const p = side(line.slice(4));
      if (p === null) file.change = 'added';
    } else if (line.startsWith('+++ ') && !inHunk) {
      const p = side(line.slice(4));
      if (p === null) file.change = 'deleted';
      else file.path = p;
    }
  }
  return files;
}
