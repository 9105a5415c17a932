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
