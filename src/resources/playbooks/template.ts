import type { z } from 'zod';
import type { ErrorDetail } from '../../kernel/errors.js';
import { zodDetails } from '../../kernel/server.js';
import { MissionIn } from '../missions/schema.js';
import type { Parameter, ParamValue } from './schema.js';

// {{name}} placeholders in a template (a playbook's mission, a routine's action, a runner's prompt
// file): finding them, checking them, filling them. A name is a parameter (`{{version}}`) or a
// dotted path into nested values (`{{event.data.taskId}}`, `{{firing.time}}`).

const NAME = '[A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z0-9_]+)*';
const PLACEHOLDER = new RegExp(`\\{\\{\\s*(${NAME})\\s*\\}\\}`, 'g');
const WHOLE = new RegExp(`^\\{\\{\\s*(${NAME})\\s*\\}\\}$`);

/** Absent optional values: a string that is only such a placeholder drops its property or item. */
const OMIT = Symbol('omit');

/** Values by name; a dotted placeholder walks nested objects and arrays. */
export type Values = Record<string, unknown>;

/** Parameter names are the template author's (`{{constructor}}` is a valid one): own properties only. */
export const valueOf = <T>(values: Record<string, T>, name: string): T | undefined => (Object.hasOwn(values, name) ? values[name] : undefined);

/** The value a placeholder names: `a.b.0` walks own properties and array items; undefined when absent. */
export function lookup(values: Values, name: string): unknown {
  let v: unknown = values;
  for (const part of name.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = valueOf(v as Record<string, unknown>, part);
  }
  return v;
}

/** Every placeholder in the template, with the path of the string that holds it. */
export function placeholders(value: unknown, path: (string | number)[] = []): { path: (string | number)[]; name: string }[] {
  if (typeof value === 'string') return [...value.matchAll(PLACEHOLDER)].map((m) => ({ path, name: m[1]! }));
  if (Array.isArray(value)) return value.flatMap((v, i) => placeholders(v, [...path, i]));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => placeholders(v, [...path, k]));
  return [];
}

/** A value inside longer text: scalars as they print, objects and arrays as JSON, nothing as "". */
const asText = (v: unknown): string => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/**
 * Fills every placeholder. A string that is exactly one placeholder takes the value with its type
 * (so "{{retries}}" can fill a number field); inside longer text the value is written as text. An
 * absent value (optional parameter, no default; a null event field) drops a whole-placeholder
 * property and is empty text.
 */
export function fill(template: unknown, values: Values): unknown {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const whole = WHOLE.exec(v);
      if (whole) return lookup(values, whole[1]!) ?? OMIT;
      return v.replace(PLACEHOLDER, (_, name: string) => asText(lookup(values, name)));
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

/** What a template may name: whether a name is known, a sample value for it, and how to list the known ones. */
export interface Vocabulary {
  known(name: string): boolean;
  sample(name: string): unknown;
  /** For the message: what the template could have named. */
  listed: string;
  /** The noun in the message: "names no parameter", "is not a variable". */
  unknownMessage(name: string): string;
}

/**
 * Checks a template when it is saved: every placeholder is known, and the template is valid for
 * `schema` apart from the strings that placeholders will replace (their values are only known when
 * it is filled, which checks the filled body again). Paths start at `at`.
 */
export function checkAgainst(template: unknown, schema: z.ZodType, vocabulary: Vocabulary, at: string): ErrorDetail[] {
  const found = placeholders(template);
  const unknown = found.filter((f) => !vocabulary.known(f.name)).map((f) => ({ path: [at, ...f.path].join('.'), message: `${vocabulary.unknownMessage(f.name)} (${vocabulary.listed})` }));
  if (unknown.length) return unknown;

  const samples: Values = Object.create(null) as Values;
  const set = (name: string, value: unknown) => {
    // Builds nested objects for dotted names, as fill reads them.
    const parts = name.split('.');
    let o = samples as Record<string, unknown>;
    for (const p of parts.slice(0, -1)) {
      const next = valueOf(o, p);
      o = (next && typeof next === 'object' ? next : (o[p] = Object.create(null))) as Record<string, unknown>;
    }
    o[parts[parts.length - 1]!] = value;
  };
  for (const f of found) set(f.name, vocabulary.sample(f.name));
  const r = schema.safeParse(fill(template, samples));
  if (r.success) return [];
  const templated = new Set(found.map((f) => f.path.join('.')));
  // An issue about a templated string (or inside one) depends on fill-time values: not an error yet.
  return zodDetails('', r.error)
    .filter((d) => !templated.has(d.path.slice(1)))
    .map((d) => ({ path: `${at}${d.path}`, message: d.message }));
}

const SAMPLE: Record<Parameter['type'], ParamValue> = { string: 'x', number: 0, boolean: false };

/** A value a parameter could take, to check a template before its real values are known. */
export const sampleOf = (p: Parameter): ParamValue => p.default ?? p.enum?.[0] ?? SAMPLE[p.type];

/**
 * A playbook's mission template: every placeholder names a parameter, and the template is a valid
 * mission body apart from the strings that placeholders will replace.
 */
export function checkTemplate(mission: unknown, parameters: Parameter[], at: string): ErrorDetail[] {
  const declared = new Map(parameters.map((p) => [p.name, p]));
  return checkAgainst(
    mission,
    MissionIn,
    {
      known: (name) => declared.has(name),
      sample: (name) => sampleOf(declared.get(name)!),
      listed: `declared: ${[...declared.keys()].join(', ') || 'none'}`,
      unknownMessage: (name) => `placeholder {{${name}}} names no parameter`,
    },
    at,
  );
}
