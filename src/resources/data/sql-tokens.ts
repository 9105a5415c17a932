// A small SQLite tokenizer: enough to find a statement's first keyword past comments and the
// columns an INSERT or an assignment list names. It never decides what SQLite runs (the compiled
// program does, see sql-guard.ts); it names what the program cannot (column targets).

export interface Token {
  kind: 'word' | 'ident' | 'string' | 'number' | 'param' | 'punct';
  /** Words upper-cased; quoted identifiers unquoted. */
  value: string;
}

export function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const ch = sql[i]!;
    if (/\s/.test(ch)) {
      i++;
    } else if (ch === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
    } else if (ch === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
    } else if (ch === "'" || ch === '"' || ch === '`') {
      let j = i + 1;
      let v = '';
      for (;;) {
        if (j >= n) break;
        if (sql[j] === ch) {
          if (sql[j + 1] === ch) {
            v += ch;
            j += 2;
            continue;
          }
          break;
        }
        v += sql[j];
        j++;
      }
      out.push({ kind: ch === "'" ? 'string' : 'ident', value: v });
      i = j + 1;
    } else if (ch === '[') {
      const end = sql.indexOf(']', i);
      const stop = end < 0 ? n : end;
      out.push({ kind: 'ident', value: sql.slice(i + 1, stop) });
      i = stop + 1;
    } else if (/[A-Za-z_\u0080-\uffff]/.test(ch)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_$\u0080-\uffff]/.test(sql[j]!)) j++;
      out.push({ kind: 'word', value: sql.slice(i, j).toUpperCase() });
      i = j;
    } else if (/[0-9.]/.test(ch) && /[0-9]/.test(ch === '.' ? (sql[i + 1] ?? '') : ch)) {
      let j = i + 1;
      while (j < n && /[0-9A-Za-z_.]/.test(sql[j]!)) j++;
      out.push({ kind: 'number', value: sql.slice(i, j) });
      i = j;
    } else if (ch === '?' || ch === ':' || ch === '@' || ch === '$') {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_]/.test(sql[j]!)) j++;
      out.push({ kind: 'param', value: sql.slice(i, j) });
      i = j;
    } else {
      out.push({ kind: 'punct', value: ch });
      i++;
    }
  }
  return out;
}

const isName = (t: Token | undefined): boolean => t !== undefined && (t.kind === 'word' || t.kind === 'ident');
const nameOf = (t: Token): string => (t.kind === 'word' ? t.value.toLowerCase() : t.value);

const SET_END = new Set(['FROM', 'WHERE', 'RETURNING', 'ORDER', 'LIMIT', 'ON']);

/**
 * The columns a write statement assigns: INSERT/REPLACE column lists and every SET list (UPDATE
 * and upsert). `listed: false` when an INSERT names no columns (it would then write all of them).
 */
export function assignedColumns(tokens: Token[]): { columns: string[]; insertWithoutColumns: boolean } {
  const columns: string[] = [];
  let insertWithoutColumns = false;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind === 'word' && t.value === 'INTO') {
      // INTO [schema.]table [AS alias] ( cols ) | VALUES | SELECT | DEFAULT VALUES
      let j = i + 1;
      if (isName(tokens[j]) && tokens[j + 1]?.value === '.' && tokens[j + 1]?.kind === 'punct') j += 2;
      j++;
      if (tokens[j]?.kind === 'word' && tokens[j]!.value === 'AS') j += 2;
      if (tokens[j]?.kind === 'punct' && tokens[j]!.value === '(') {
        for (j++; j < tokens.length && !(tokens[j]!.kind === 'punct' && tokens[j]!.value === ')'); j++) {
          if (isName(tokens[j])) columns.push(nameOf(tokens[j]!));
        }
      } else if (!(tokens[j]?.kind === 'word' && tokens[j]!.value === 'DEFAULT')) {
        insertWithoutColumns = true;
      }
    } else if (t.kind === 'word' && t.value === 'SET') {
      let depth = 0;
      let expectTarget = true;
      for (let j = i + 1; j < tokens.length; j++) {
        const u = tokens[j]!;
        if (u.kind === 'punct' && u.value === '(') {
          if (expectTarget && depth === 0) {
            // (a, b) = (...): a column-name list
            for (j++; j < tokens.length && !(tokens[j]!.kind === 'punct' && tokens[j]!.value === ')'); j++) {
              if (isName(tokens[j])) columns.push(nameOf(tokens[j]!));
            }
            expectTarget = false;
            continue;
          }
          depth++;
        } else if (u.kind === 'punct' && u.value === ')') {
          if (depth === 0) break;
          depth--;
        } else if (depth === 0 && u.kind === 'punct' && u.value === ',') {
          expectTarget = true;
        } else if (depth === 0 && u.kind === 'word' && SET_END.has(u.value)) {
          break;
        } else if (expectTarget && isName(u)) {
          columns.push(nameOf(u));
          expectTarget = false;
        } else {
          expectTarget = false;
        }
      }
    }
  }
  return { columns, insertWithoutColumns };
}
