// Local JSON references (`{"$ref": "#/components/schemas/Task"}`) in a document such as the
// OpenAPI one: what a pointer names, and the document with every reference written out again.

/** The value the local JSON Pointer `ref` (`#/a/b~1c`, RFC 6901) names in `doc`, or undefined. */
export function atPointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let at: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (at === null || typeof at !== 'object' || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/**
 * `value` (by default the whole of `doc`) with every local $ref replaced by a copy of what it
 * names. Keywords beside a $ref are kept and win over the target's: in the documents written here
 * they are annotations (a description) that OpenAPI 3.1 lets a reference override. Throws on a
 * reference that names nothing or that contains itself.
 */
export function dereference(doc: unknown, value: unknown = doc, open: readonly string[] = []): unknown {
  if (Array.isArray(value)) return value.map((x) => dereference(doc, x, open));
  if (value === null || typeof value !== 'object') return value;
  const $ref = (value as Record<string, unknown>).$ref;
  const isRef = typeof $ref === 'string';
  const own = Object.fromEntries(Object.entries(value).flatMap(([k, x]) => (isRef && k === '$ref' ? [] : [[k, dereference(doc, x, open)]])));
  if (!isRef) return own;
  if (open.includes($ref)) throw new Error(`$ref ${$ref} contains itself`);
  const target = atPointer(doc, $ref);
  if (target === undefined) throw new Error(`$ref ${$ref} names nothing`);
  const resolved = dereference(doc, target, [...open, $ref]);
  return resolved !== null && typeof resolved === 'object' && !Array.isArray(resolved) ? { ...resolved, ...own } : resolved;
}
