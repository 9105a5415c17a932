export type JsonResult = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * JSON.parse that never repeats the input in its error. V8's messages quote the text around the
 * fault, and that text may be a secret (a request body, an API key in project.json), so only the
 * position is kept.
 */
export function parseJson(text: string): JsonResult {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    const at = /position (\d+)/.exec((err as Error).message)?.[1];
    return { ok: false, error: at ? `not valid JSON (at position ${at})` : 'not valid JSON' };
  }
}

/**
 * The deepest nesting of arrays and objects a request body may have (DESIGN section 3). Real
 * payloads stay far below it; deeper ones exist only to exhaust the stack of whatever walks them.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * True when the JSON text nests arrays and objects deeper than `max`. A single pass over the text
 * (brackets inside strings do not count), run before parsing, so nothing ever walks a deep value.
 */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
