// JSON for a file people read and diff: two-space indentation, as JSON.stringify(v, null, 2), but
// an object or array whose line fits in `width` columns stays on that line. Most of a $ref-heavy
// document is short objects, so this halves the committed OpenAPI file without making it opaque.

/** `value` as indented JSON with short objects and arrays inline, ending in a newline. */
export function formatJson(value: unknown, width = 120): string {
  return format(value, '', 0, width) + '\n';
}

/** `lead` is how many columns the line already holds before the value (indent, key). */
function format(value: unknown, indent: string, lead: number, width: number): string {
  const flat = JSON.stringify(value);
  if (value === null || typeof value !== 'object' || lead + flat.length <= width) return flat;
  const inner = indent + '  ';
  const items = Array.isArray(value)
    ? value.map((v) => inner + format(v, inner, inner.length, width))
    : Object.entries(value).map(([k, v]) => {
        const key = `${inner}${JSON.stringify(k)}: `;
        return key + format(v, inner, key.length, width);
      });
  if (items.length === 0) return flat;
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  return `${open}\n${items.join(',\n')}\n${indent}${close}`;
}
