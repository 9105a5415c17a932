// Checks that two OpenAPI documents describe the same API: every $ref is resolved in both, and then
// each operation (parameters, request body, every response with its headers and schema) must be
// equal, key order aside. The one rewriting allowed is the success envelope: `allOf: [Ok, {data}]`
// is read as the inline `{ok: true, data}` object it stands for.
// Run after `npm run build`:
//   git show <base>:docs/openapi.json > /tmp/old.json && node scripts/openapi-compare.mjs /tmp/old.json docs/openapi.json
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';

const { dereference } = await import(new URL('../dist/src/lib/json-ref.js', import.meta.url).href);

const [oldFile, newFile] = process.argv.slice(2);
if (!oldFile || !newFile) {
  console.error('usage: node scripts/openapi-compare.mjs <old.json> <new.json>');
  process.exit(2);
}

// Resolved by src/lib/json-ref.ts rather than a library: json-schema-ref-parser's dereference reuses
// the first expansion of a target for every later $ref to it, dropping their own descriptions.
const load = (file) => dereference(JSON.parse(readFileSync(file, 'utf8')));

/** The inline envelope for `allOf: [<Ok, dereferenced>, {properties: {data}, required: ['data']}]`. */
function inlineEnvelope(v, ok) {
  if (Array.isArray(v)) return v.map((x) => inlineEnvelope(x, ok));
  if (v === null || typeof v !== 'object') return v;
  if (ok && Array.isArray(v.allOf) && v.allOf.length === 2 && Object.keys(v).length === 1 && isDeepStrictEqual(v.allOf[0], ok)) {
    const part = v.allOf[1];
    if (isDeepStrictEqual(Object.keys(part).sort(), ['properties', 'required']) && isDeepStrictEqual(part.required, ['data'])) {
      return { type: 'object', properties: { ok: ok.properties.ok, data: inlineEnvelope(part.properties.data, ok) }, required: ['ok', 'data'], additionalProperties: false };
    }
  }
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, inlineEnvelope(x, ok)]));
}

/** Where two values differ, as JSON paths (at most `max`). */
function differences(a, b, path = '', out = [], max = 20) {
  if (out.length >= max || isDeepStrictEqual(a, b)) return out;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) differences(a[k], b[k], `${path}/${k}`, out, max);
  } else out.push(`${path}: ${JSON.stringify(a)?.slice(0, 160)} ≠ ${JSON.stringify(b)?.slice(0, 160)}`);
  return out;
}

const [before, after] = [load(oldFile), load(newFile)];
const ok = after.components?.schemas?.Ok;
let operations = 0;
const problems = [];
const keys = (doc) => Object.entries(doc.paths).flatMap(([p, ms]) => Object.keys(ms).map((m) => `${m.toUpperCase()} ${p}`));
const [oldOps, newOps] = [new Set(keys(before)), new Set(keys(after))];
for (const k of oldOps) if (!newOps.has(k)) problems.push(`${k}: missing from ${newFile}`);
for (const k of newOps) if (!oldOps.has(k)) problems.push(`${k}: not in ${oldFile}`);
for (const [path, methods] of Object.entries(before.paths)) {
  for (const [method, op] of Object.entries(methods)) {
    const other = after.paths[path]?.[method];
    if (!other) continue;
    operations++;
    for (const d of differences(inlineEnvelope(op, ok), inlineEnvelope(other, ok))) problems.push(`${method.toUpperCase()} ${path}${d}`);
  }
}
const outside = differences(
  { ...before, paths: undefined, components: { ...before.components, schemas: undefined, responses: undefined } },
  { ...after, paths: undefined, components: { ...after.components, schemas: undefined, responses: undefined } },
);
for (const d of outside) problems.push(`document${d}`);
const size = (f) => readFileSync(f).length;
console.log(`${operations} operations compared; ${oldFile} ${size(oldFile)} bytes, ${newFile} ${size(newFile)} bytes`);
for (const p of problems) console.log(`  ${p}`);
console.log(problems.length === 0 ? 'same API' : `${problems.length} differences`);
process.exit(problems.length === 0 ? 0 : 1);
