// The first keyword of a statement, read the way SQLite's own tokenizer reads it (tokenize.c):
// whitespace is exactly space, tab, newline, form feed and carriage return (not U+00A0, U+2028,
// U+FEFF or the other characters JavaScript's \s matches: SQLite reads those as identifier
// characters); comments are `-- … newline` and `/* … */` (unterminated: to the end); a keyword is
// a run of identifier characters (ASCII letters, digits, `_`, `$`, and every non-ASCII character).

const SPACE = new Set([' ', '\t', '\n', '\f', '\r']);
const ID_START = /[A-Za-z_\u0080-\uffff]/;
const ID_CHAR = /[A-Za-z0-9_$\u0080-\uffff]/;

/** The statement's first keyword, upper-cased; '' when it does not start with one. */
export function firstKeyword(sql: string): string {
  const n = sql.length;
  let i = 0;
  for (;;) {
    if (i >= n) return '';
    const ch = sql[i]!;
    if (SPACE.has(ch)) {
      i++;
    } else if (ch === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      if (end < 0) return '';
      i = end + 1;
    } else if (ch === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      if (end < 0) return '';
      i = end + 2;
    } else {
      break;
    }
  }
  if (!ID_START.test(sql[i]!)) return '';
  let j = i + 1;
  while (j < n && ID_CHAR.test(sql[j]!)) j++;
  // ASCII only, as SQLite folds keywords: 'ſelect'.toUpperCase() is 'SELECT' to JavaScript, an identifier to SQLite.
  return sql.slice(i, j).replace(/[a-z]+/g, (w) => w.toUpperCase());
}
