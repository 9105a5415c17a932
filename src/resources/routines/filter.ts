import { z } from 'zod';
import type { ErrorDetail } from '../../kernel/errors.js';
import { lookup } from '../playbooks/template.js';

// A trigger's filter on the event's data: the small grammar docs/routines.md documents. Keys are
// dotted paths into the data (`to`, `usage.costUsd`); a value is what the field must be:
//   "failed" / 3 / true / null   equal to it
//   ["failed", "review"]         one of them
//   {"not": x}                   not equal (x a value or a list: none of them)
//   {"gt"|"gte"|"lt"|"lte": n}   a number compared
//   {"prefix": "abc"}            a string starting with it
// Every condition must hold. A field the event lacks is null.

const Scalar = z.union([z.string().max(1000), z.number(), z.boolean(), z.null()]);
const OneOf = z.array(Scalar).min(1).max(100);
const Operator = z
  .strictObject({
    not: z.union([Scalar, OneOf]).optional(),
    gt: z.number().optional(),
    gte: z.number().optional(),
    lt: z.number().optional(),
    lte: z.number().optional(),
    prefix: z.string().min(1).max(1000).optional(),
  })
  .refine((o) => Object.keys(o).length > 0, 'name at least one of not, gt, gte, lt, lte, prefix')
  .meta({ id: 'RoutineFilterOperator' });

export const DataFilter = z
  .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+){0,4}$/, 'must be a field name or a dotted path (at most 5 parts)'), z.union([Scalar, OneOf, Operator]))
  .refine((f) => Object.keys(f).length <= 20, 'at most 20 conditions')
  .describe(
    'Conditions on the event data, all of which must hold: {"to": "failed"}, {"status": ["failed", "timed_out"]}, {"attempt": {"gte": 3}}, {"title": {"prefix": "deploy"}}, {"assignTo": {"not": null}}. docs/routines.md has the grammar.',
  );
export type DataFilter = z.output<typeof DataFilter>;

type Cond = z.output<typeof Scalar> | z.output<typeof OneOf> | z.output<typeof Operator>;
type Test = (v: unknown) => boolean;

const inList = (list: readonly unknown[], v: unknown) => list.some((x) => x === v);

function compileCond(c: Cond): Test {
  if (c === null || typeof c !== 'object') return (v) => v === c;
  if (Array.isArray(c)) return (v) => inList(c, v);
  const tests: Test[] = [];
  if (c.not !== undefined) {
    const not = c.not;
    tests.push(Array.isArray(not) ? (v) => !inList(not, v) : (v) => v !== not);
  }
  const num =
    (cmp: (v: number) => boolean): Test =>
    (v) =>
      typeof v === 'number' && cmp(v);
  if (c.gt !== undefined) tests.push(num((v) => v > c.gt!));
  if (c.gte !== undefined) tests.push(num((v) => v >= c.gte!));
  if (c.lt !== undefined) tests.push(num((v) => v < c.lt!));
  if (c.lte !== undefined) tests.push(num((v) => v <= c.lte!));
  if (c.prefix !== undefined) tests.push((v) => typeof v === 'string' && v.startsWith(c.prefix!));
  return (v) => tests.every((t) => t(v));
}

/** The filter as one test of an event's data; an empty or absent filter matches everything. */
export function compileDataFilter(filter: DataFilter | null | undefined): (data: Record<string, unknown>) => boolean {
  const conds = Object.entries(filter ?? {}).map(([path, c]) => ({ path, test: compileCond(c) }));
  if (!conds.length) return () => true;
  return (data) => conds.every(({ path, test }) => test(lookup(data, path) ?? null));
}

/** Filter paths whose first part is no field of the events the trigger can hear (a typo would never match). */
export function unknownFields(filter: DataFilter | null | undefined, fields: ReadonlySet<string>, at: string): ErrorDetail[] {
  return Object.keys(filter ?? {})
    .filter((p) => !fields.has(p.split('.')[0]!))
    .map((p) => ({ path: `${at}.${p}`, message: `no event this trigger hears has a data field "${p.split('.')[0]}" (they have: ${[...fields].sort().join(', ') || 'none'})` }));
}
