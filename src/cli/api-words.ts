import type { Command } from 'commander';
import type { EndpointCommand } from '../kernel/resource.js';

// The API's words for a person at a terminal. The API names a field by its place in the request
// (body.maxTurns, query.taskId) and sends people to endpoints (POST /api/v1/data/{resource}/migrations);
// someone using the CLI typed flags and arguments, and runs commands. Every failure the CLI prints
// goes through cliWords(): its message, and each detail's path and message.
//
// Fields: the failed command's options fill the fields named after them (--max-turns: maxTurns),
// its arguments the fields and path parameters named after them (<name>: name), and fills()
// declares the rest, where a command fills a field under another name (--write: mode, --tool:
// allowedTools), a whole body from a file ('body': '<file>'), or any field it is told by name
// ('body.*': '--unset *'). A field is
// translated where the API writes it as a path (body.mode), as `with mode "write"` (with the
// values a declaration gives), or as a camelCase name (maxRows): lowercase names (mode, name) are
// also ordinary words, so they are left alone in prose.
//
// Endpoints: each resource's descriptor says which command does what its endpoints do (`endpoints`);
// ids the message gives (in the path, or as "key": "value" in a body after it) are put into the command.

/** A field filled under another name: what was typed, and what to say for a value of it. */
export interface Fill {
  /** The flag or argument as a person typed it: `--write`, `<newName>`, `--param/--param-json`. */
  as: string;
  /** `with <field> "<value>"` in a message → this, e.g. {write: 'with --write', read: 'without --write'}. */
  values?: Record<string, string>;
}

const declared = new WeakMap<Command, Map<string, Fill>>();

/**
 * Declares the request fields `cmd` fills under other names than theirs, by their place in the
 * request: fills(cmd, {'body.mode': {as: '--write', …}, 'body.allowedTools': '--tool'}).
 */
export function fills(cmd: Command, fields: Record<string, string | Fill>): Command {
  const map = declared.get(cmd) ?? new Map<string, Fill>();
  for (const [path, f] of Object.entries(fields)) map.set(path, typeof f === 'string' ? { as: f } : f);
  declared.set(cmd, map);
  return cmd;
}

/** Every field the command fills, by its place in the request, with what a person typed for it. */
function fieldsOf(cmd: Command | undefined): Map<string, Fill> {
  const map = new Map<string, Fill>();
  if (!cmd) return map;
  for (const o of cmd.options) {
    const as = o.long ?? o.short;
    if (!as || o.negate) continue;
    map.set(`body.${o.attributeName()}`, { as });
    map.set(`query.${o.attributeName()}`, { as });
  }
  for (const a of cmd.registeredArguments) {
    const as = { as: a.required ? `<${a.name()}${a.variadic ? '...' : ''}>` : `[${a.name()}${a.variadic ? '...' : ''}]` };
    map.set(`body.${a.name()}`, as);
    map.set(`params.${a.name()}`, as);
  }
  for (const [path, f] of declared.get(cmd) ?? []) map.set(path, f);
  return map;
}

const ORDINAL = (n: number): string => {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : (({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th');
  return `${n}${suffix}`;
};

/** A field path (body.allowedTools.2) as typed (--tool (the 3rd)), or as it was if nothing fills it. */
function typedPath(path: string, fields: Map<string, Fill>): string {
  const parts = path.split('.');
  const typed = (as: string, rest: string[]): string => {
    if (!rest.length) return as;
    // A repeatable option's values are an array: the index is which of them, counted from 1.
    if (rest.length === 1 && /^\d+$/.test(rest[0]!)) return `${as} (the ${ORDINAL(Number(rest[0]) + 1)})`;
    return `${as} ${rest.join('.')}`;
  };
  for (let n = parts.length; n >= 1; n--) {
    const f = fields.get(parts.slice(0, n).join('.'));
    if (f) return typed(f.as, parts.slice(n));
  }
  // 'body.*': any other field, named in what was typed (--unset <field> fills the field it names).
  for (let n = parts.length - 1; n >= 1; n--) {
    const f = fields.get(`${parts.slice(0, n).join('.')}.*`);
    if (f) return typed(f.as.replace('*', parts[n]!), parts.slice(n + 1));
  }
  return path;
}

/** An endpoint as the API writes it in a message: method, path, perhaps a JSON-like body after it. */
const ENDPOINT_RE = /\b(GET|POST|PUT|PATCH|DELETE) (\/(?:api\/)?v1(?:\/[\w{}%:-]+)*)(?: (\{[^{}]*\}))?/g;
/** "key": value pairs of such a body ("requestedBy" alone, a property to fill in, has no value). */
const PAIR_RE = /"(\w+)"\s*:\s*("(?:[^"\\]|\\.)*"|[^,}\s]+)/g;

const pairsOf = (body: string | undefined): Map<string, string> => new Map([...(body ?? '').matchAll(PAIR_RE)].map((m) => [m[1]!, m[2]!]));

interface CompiledEndpoint {
  method: string;
  path: RegExp;
  requires: Map<string, string>;
  command: string;
  names: Record<string, string>;
}

let given: readonly EndpointCommand[] = [];
let compiled: CompiledEndpoint[] | null = null;

/**
 * The endpoints the CLI names by their commands: the resources' descriptors' `endpoints`, given by
 * the CLI's root (run.ts), which knows the descriptors; this plumbing sits below them.
 */
export function useEndpointWords(list: readonly EndpointCommand[]): void {
  given = list;
  compiled = null;
}

function endpoints(): CompiledEndpoint[] {
  return (compiled ??= given.map((e) => {
    const [, method, path, body] = /^(\w+) (\S+)(?: (.*))?$/.exec(e.endpoint)!;
    const re = path!.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, '(?<$1>[^/]+)');
    return { method: method!, path: new RegExp(`^${re}$`), requires: pairsOf(body), command: e.command, names: e.names ?? {} };
  }));
}

/** One word of a shell command line, quoted when it must be. */
export const shellWord = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The command for one endpoint mention, or null when no command does what it does. */
function commandFor(method: string, path: string, body: string | undefined): string | null {
  const pairs = pairsOf(body);
  for (const e of endpoints()) {
    if (e.method !== method) continue;
    const m = e.path.exec(path);
    if (!m || [...e.requires].some(([k, v]) => pairs.get(k) !== v)) continue;
    const given = new Map<string, string>();
    for (const [k, v] of pairs) if (v.startsWith('"')) given.set(k, JSON.parse(v) as string);
    // A path segment still written as a template ({resource}) gives no id.
    for (const [k, v] of Object.entries(m.groups ?? {})) if (!/^\{\w+\}$/.test(v)) given.set(k, decodeURIComponent(v));
    return e.command.replace(/\{(\w+)\}/g, (_, k: string) => (given.has(k) ? shellWord(given.get(k)!) : `<${e.names[k] ?? k}>`));
  }
  return null;
}

/** Endpoints in a text → the commands that do the same; one with no command stays as it is. */
export function commandWords(text: string): string {
  return text.replace(ENDPOINT_RE, (all, method: string, path: string, body: string | undefined) => {
    const c = commandFor(method, path, body);
    return c === null ? all : `\`${c}\``;
  });
}

/** A message of the API in the words of `cmd`'s command line: its flags, arguments and other commands. */
export function cliText(text: string, cmd: Command | undefined): string {
  const fields = fieldsOf(cmd);
  let s = commandWords(text);
  if (!fields.size) return s;
  s = s.replace(/\b(?:body|query|params)\.[A-Za-z]\w*(?:\.\w+)*/g, (p) => typedPath(p, fields));
  for (const [path, f] of fields) {
    const name = path.slice(path.indexOf('.') + 1);
    for (const [value, words] of Object.entries(f.values ?? {})) s = s.split(`with ${name} ${JSON.stringify(value)}`).join(words);
    if (/[A-Z]/.test(name)) s = s.replace(new RegExp(`(?<![\\w.-])${name}(?![\\w-])`, 'g'), f.as);
  }
  return s;
}

/** Details of a failure (path + message) in the words of `cmd`'s command line. */
export function cliDetails(details: { path: string; message: string }[], cmd: Command | undefined): { path: string; message: string }[] {
  const fields = fieldsOf(cmd);
  return details.map((d) => ({ path: typedPath(d.path, fields), message: cliText(d.message, cmd) }));
}
