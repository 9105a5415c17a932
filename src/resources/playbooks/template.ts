import type { ErrorDetail } from '../../kernel/errors.js';
import { zodDetails } from '../../kernel/server.js';
import { MissionIn } from '../missions/schema.js';
import type { Parameter, ParamValue } from './schema.js';

// {{param}} placeholders in a mission template: finding them, checking them, filling them.

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
const WHOLE = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/;

/** Absent optional values: a string that is only such a placeholder drops its property or item. */
const OMIT = Symbol('omit');

export type Values = Record<string, ParamValue | undefined>;

/** Parameter names are the template author's (`{{constructor}}` is a valid one): own properties only. */
export const valueOf = <T>(values: Record<string, T>, name: string): T | undefined => (Object.hasOwn(values, name) ? values[name] : undefined);

/** Every placeholder in the template, with the path of the string that holds it. */
export function placeholders(value: unknown, path: (string | number)[] = []): { path: (string | number)[]; name: string }[] {
  if (typeof value === 'string') return [...value.matchAll(PLACEHOLDER)].map((m) => ({ path, name: m[1]! }));
  if (Array.isArray(value)) return value.flatMap((v, i) => placeholders(v, [...path, i]));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => placeholders(v, [...path, k]));
  return [];
}

/**
 * Fills every placeholder. A string that is exactly one placeholder takes the value with its type
 * (so "{{retries}}" can fill a number field); inside longer text the value is written as text. An
 * absent value (optional parameter, no default) drops a whole-placeholder property and is empty text.
 */
export function fill(template: unknown, values: Values): unknown {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const whole = WHOLE.exec(v);
      if (whole) return valueOf(values, whole[1]!) ?? OMIT;
      return v.replace(PLACEHOLDER, (_, name: string) => String(valueOf(values, name) ?? ''));
    }
    if (Array.isArray(v)) return v.map(walk).filter((x) => x !== OMIT);
    if (v && typeof v === 'object') {
      // fromEntries defines own properties, so a "__proto__" key stays a key and never a prototype.
      return Object.fromEntries(
        Object.entries(v)
          .map(([k, x]) => [k, walk(x)] as const)
          .filter(([, f]) => f !== OMIT),
      );
    }
    return v;
  };
  const out = walk(template);
  return out === OMIT ? undefined : out;
}

const SAMPLE: Record<Parameter['type'], ParamValue> = { string: 'x', number: 0, boolean: false };

/**
 * Checks a template when it is saved: every placeholder names a parameter, and the template is a
 * valid mission body apart from the strings that placeholders will replace (their values are only
 * known at run time; the run checks the filled body again). Paths start at `at`.
 */
export function checkTemplate(mission: unknown, parameters: Parameter[], at: string): ErrorDetail[] {
  const declared = new Set(parameters.map((p) => p.name));
  const found = placeholders(mission);
  const unknown = found
    .filter((f) => !declared.has(f.name))
    .map((f) => ({ path: [at, ...f.path].join('.'), message: `placeholder {{${f.name}}} names no parameter (declared: ${[...declared].join(', ') || 'none'})` }));
  if (unknown.length) return unknown;

  const samples: Values = Object.fromEntries(parameters.map((p) => [p.name, p.default ?? p.enum?.[0] ?? SAMPLE[p.type]]));
  const r = MissionIn.safeParse(fill(mission, samples));
  if (r.success) return [];
  const templated = new Set(found.map((f) => f.path.join('.')));
  // An issue about a templated string (or inside one) depends on run-time values: not an error yet.
  return zodDetails('', r.error)
    .filter((d) => !templated.has(d.path.slice(1)))
    .map((d) => ({ path: `${at}${d.path}`, message: d.message }));
}
