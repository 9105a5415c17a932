import pgQueryModule from 'libpg-query/wasm/libpg-query.js';
import { exeAsset } from '../../../lib/exe.js';

// PostgreSQL's own parser (libpg_query, compiled to WASM) for the subset check (subset.ts).
// libpg-query's own wrapper keeps one WASM instance for the process; a statement whose parse tree
// is deep enough overflows the stack inside the WASM (a RangeError), which can leave that instance
// broken for every later call. So this file runs its own instance, through the same exports the
// wrapper uses, and replaces it after anything but a parse error.

interface PgModule {
  _wasm_parse_query_raw(query: number): number;
  _wasm_free_parse_result(result: number): void;
  _malloc(size: number): number;
  _free(ptr: number): void;
  lengthBytesUTF8(s: string): number;
  stringToUTF8(s: string, ptr: number, max: number): void;
  getValue(ptr: number, type: 'i32'): number;
  UTF8ToString(ptr: number): string;
}

let instance: Promise<PgModule> | null = null;

function pgModule(): Promise<PgModule> {
  if (!instance) {
    // The single executable carries the WASM as an asset; elsewhere it is read from the package.
    const wasmBinary = exeAsset('libpg-query.wasm');
    instance = pgQueryModule(wasmBinary ? { wasmBinary } : {}) as Promise<PgModule>;
    instance.catch(() => (instance = null));
  }
  return instance;
}

/** The parser refused the text: its message, and the 1-based character position (0: none). */
export class ParseError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }
}

/** The parse tree as libpg_query writes it: each statement a wrapped node ({"SelectStmt": {...}}). */
export interface ParseTree {
  stmts?: { stmt?: Record<string, unknown> }[];
}

/** pg_query_parse: the JSON parse tree, or a ParseError with the parser's message and 1-based character position. */
function rawParse(mod: PgModule, sql: string): ParseTree {
  const len = mod.lengthBytesUTF8(sql) + 1;
  const query = mod._malloc(len);
  let result = 0;
  try {
    mod.stringToUTF8(sql, query, len);
    result = mod._wasm_parse_query_raw(query);
    if (!result) throw new Error('libpg_query: no parse result');
    // struct PgQueryParseResult { char *parse_tree; char *stderr_buffer; PgQueryError *error; }
    const tree = mod.getValue(result, 'i32');
    const error = mod.getValue(result + 8, 'i32');
    if (error) {
      // struct PgQueryError { char *message; char *funcname; char *filename; int lineno; int cursorpos; char *context; }
      const message = mod.getValue(error, 'i32');
      throw new ParseError(message ? mod.UTF8ToString(message) : 'syntax error', mod.getValue(error + 16, 'i32'));
    }
    return JSON.parse(mod.UTF8ToString(tree)) as ParseTree;
  } finally {
    mod._free(query);
    if (result) mod._wasm_free_parse_result(result);
  }
}

/**
 * The parse tree of `sql`, or a ParseError. Any other failure is a trap inside the WASM (a stack
 * overflow is a RangeError): the instance it happened in is not used again, and it is rethrown.
 */
export async function parsePg(sql: string): Promise<ParseTree> {
  const current = pgModule();
  const mod = await current;
  try {
    return rawParse(mod, sql);
  } catch (err) {
    if (!(err instanceof ParseError) && instance === current) instance = null;
    throw err;
  }
}
