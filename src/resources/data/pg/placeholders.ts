import { parsePg, ParseError, type ParseTree } from './parser.js';

// SQLite's `?` placeholders in a PostgreSQL statement, numbered $1…$n, so that the same /query
// (and the README's `svc db query shop "… WHERE total > ?"`) runs on both providers. Which `?` is
// a placeholder is decided by PostgreSQL's own parser, never by a pattern over the text: every `?`
// is replaced by a parameter with a number of its own, far above any a caller writes, and the
// statement parsed; a `?` whose number comes back as a parameter in the tree is a placeholder,
// while one in a string, a quoted name, a comment or a dollar-quoted body comes back inside that
// text and stays as written.
//
// `?` is also an operator of jsonb (`doc ? 'key'`, `?|`, `?&`). A statement that parses as written,
// using no `?` as a prefix operator (PostgreSQL has none: that is a placeholder before a negative
// number, `= ? - 1`), is left as it is; only one that does not is translated.

/** Placeholder i is parsed as $(FIRST + i): above the 65535 a statement may use, within an int4. */
const FIRST = 1_000_000;

export type Numbered =
  /** The statement with its placeholders numbered, and how many there are. */
  | { sql: string; count: number }
  /** It uses `?` placeholders and `$n` parameters both. */
  | { mixed: true };

/** Whether the tree applies `?` as a prefix operator (no left operand): no PostgreSQL operator is one. */
function prefixQuestion(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(prefixQuestion);
  if (node === null || typeof node !== 'object') return false;
  const expr = (node as { A_Expr?: { name?: { String?: { sval?: string } }[]; lexpr?: unknown } }).A_Expr;
  if (expr && expr.lexpr === undefined && expr.name?.length === 1 && expr.name[0]?.String?.sval === '?') return true;
  return Object.values(node).some(prefixQuestion);
}

/** The parameter numbers in the tree. */
function paramNumbers(node: unknown, into: Set<number>): Set<number> {
  if (Array.isArray(node)) for (const n of node) paramNumbers(n, into);
  else if (node !== null && typeof node === 'object') {
    const ref = (node as { ParamRef?: { number?: unknown } }).ParamRef;
    if (ref && typeof ref.number === 'number') into.add(ref.number);
    for (const v of Object.values(node)) paramNumbers(v, into);
  }
  return into;
}

async function tryParse(sql: string): Promise<ParseTree | null> {
  try {
    return await parsePg(sql);
  } catch (err) {
    if (err instanceof ParseError) return null;
    throw err;
  }
}

/**
 * `sql` with its `?` placeholders numbered $1…$n in order, or null when it has none to number (it
 * is then admitted as written, and a parse error is the parser's own). Throws what parsePg throws
 * besides a ParseError (a statement nested too deeply).
 */
export async function numberPlaceholders(sql: string): Promise<Numbered | null> {
  if (!sql.includes('?')) return null;
  const asWritten = await tryParse(sql);
  if (asWritten && !prefixQuestion(asWritten)) return null;
  const parts = sql.split('?');
  const candidate = parts.reduce((out, part, i) => `${out}$${FIRST + i - 1}${part}`);
  const tree = await tryParse(candidate);
  if (!tree) return null;
  const numbers = paramNumbers(tree, new Set());
  const placeholders = new Set([...numbers].filter((n) => n >= FIRST).map((n) => n - FIRST));
  if (placeholders.size === 0) return null;
  if (placeholders.size < numbers.size) return { mixed: true };
  let count = 0;
  const out = parts.reduce((text, part, i) => `${text}${placeholders.has(i - 1) ? `$${++count}` : '?'}${part}`);
  return { sql: out, count };
}
