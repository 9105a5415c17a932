// The one redaction of the daemon: text that came from outside (an upstream's error, a stored chat
// session) loses every secret the daemon holds before it is answered, logged, emitted or kept.

export const REDACTED = '[REDACTED]';

/** Shorter values are left alone: they would redact ordinary words and say little about a key. */
export const MIN_SECRET_LENGTH = 4;

/** Each secret as written and as it reads inside a JSON string (`"` → `\"`, newline → `\n`…). */
function formsOf(secrets: Iterable<string>): string[] {
  const forms = new Set<string>();
  for (const s of secrets) {
    if (s.length < MIN_SECRET_LENGTH) continue;
    forms.add(s);
    forms.add(JSON.stringify(s).slice(1, -1));
  }
  return [...forms];
}

/**
 * Occurrences are found in the original text, and where they overlap or nest (a secret inside a
 * longer one) the whole covered stretch becomes one [REDACTED]: replacing one secret after
 * another would leave the tail of the longer (`[REDACTED]EXTRA`), whatever the order.
 */
function cover(text: string, forms: readonly string[]): string {
  const spans: [number, number][] = [];
  for (const form of forms) {
    // Stepping by one, not by the form's length: "aaaa" is in "aaaaa" twice.
    for (let at = text.indexOf(form); at >= 0; at = text.indexOf(form, at + 1)) spans.push([at, at + form.length]);
  }
  if (!spans.length) return text;
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let done = 0;
  let [start, end] = spans[0]!;
  for (const [s, e] of spans) {
    if (s < end) {
      end = Math.max(end, e);
      continue;
    }
    out += text.slice(done, start) + REDACTED;
    done = end;
    [start, end] = [s, e];
  }
  return out + text.slice(done, start) + REDACTED + text.slice(end);
}

/** `text` with every occurrence of every secret, raw or JSON-escaped, replaced by [REDACTED]. */
export function redact(text: string, secrets: Iterable<string>): string {
  return cover(text, formsOf(secrets));
}

/**
 * A copy of `value` with every string in it (object keys too) redacted. Structured data is
 * redacted before it is serialized, never as JSON text: a secret that matched across the JSON's
 * own quotes or escapes (`\nabcd` holds `nabcd`) would leave text that no longer parses.
 */
export function redactValue<T>(value: T, secrets: Iterable<string>): T {
  const forms = formsOf(secrets);
  if (!forms.length) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return cover(v, forms);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [cover(k, forms), walk(x)]));
    return v;
  };
  return walk(value) as T;
}
