import { createHash } from 'node:crypto';
import type { InputItem, ResponsesRequest, ResponsesTool } from './responses-schema.js';

// The tools of a Responses request as the function tools a chat model takes, and the model's calls
// back as the items the client expects. Codex sends namespaces (an MCP server's tools, its
// sub-agents'), custom freeform tools (apply_patch), a client-run tool_search and hosted tools
// (web_search): a chat upstream knows only functions with names matching ^[a-zA-Z0-9_-]{1,64}$.
// Every upstream name is looked up in a Map to what it stands for, never split apart. Pure.

type Json = Record<string, unknown>;

/** What a function the upstream was given stands for on the client's side. */
export type ToolTarget = { kind: 'function'; name: string; namespace?: string } | { kind: 'custom'; name: string; namespace?: string } | { kind: 'tool_search' };

/** A chat-completions function tool, as sent upstream. */
export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: unknown; strict?: boolean };
}

const VALID_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_NAME = 64;
const TOOL_SEARCH = 'tool_search';

const keyOf = (t: ToolTarget): string => JSON.stringify(t.kind === 'tool_search' ? [t.kind] : [t.kind, t.namespace ?? null, t.name]);

const joinedName = (t: ToolTarget): string => (t.kind === 'tool_search' ? TOOL_SEARCH : t.namespace ? `${t.namespace}__${t.name}` : t.name);

/** `<namespace>__<name>` (or the name), made valid: other characters become `_`, a long one keeps a hash of what it stands for. */
function baseName(t: ToolTarget): string {
  const joined = joinedName(t);
  if (VALID_NAME.test(joined)) return joined;
  const clean = joined.replace(/[^a-zA-Z0-9_-]/g, '_');
  return clean.length <= MAX_NAME ? clean : hashedName(clean, keyOf(t));
}

function hashedName(clean: string, key: string, n = 0): string {
  const hash = createHash('sha256').update(`${key}#${n}`).digest('hex').slice(0, 8);
  return `${clean.slice(0, MAX_NAME - 9)}_${hash}`;
}

/** The input a custom tool was called with: `{"input": "…"}` as asked, or the raw text a model sent instead. */
export function customInput(args: string): string {
  try {
    const v = JSON.parse(args) as unknown;
    if (typeof v === 'string') return v;
    if (v && typeof v === 'object' && typeof (v as Json).input === 'string') return (v as Json).input as string;
  } catch {
    // not JSON: the model wrote the input itself
  }
  return args;
}

function searchArguments(args: string): unknown {
  try {
    const v = JSON.parse(args) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

function customDescription(t: Extract<ResponsesTool, { type: 'custom' }>): string {
  const format = t.format;
  const grammar = format?.type === 'grammar' && format.definition ? `\n\nThe input must match this ${format.syntax ?? ''} grammar:\n${format.definition}` : '';
  return `${t.description ?? ''}\n\nCall it with {"input": "<the whole input as one string>"}: the input is free text, not JSON.${grammar}`.trim();
}

const CUSTOM_PARAMETERS = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The whole input, as free text.' } },
  required: ['input'],
  additionalProperties: false,
};

interface Entry {
  target: ToolTarget;
  spec: Omit<ChatTool['function'], 'name'>;
}

/** The tools of one request, flattened for the upstream, and the way back for each. */
export class ToolMap {
  private readonly byName = new Map<string, ToolTarget>();
  private readonly byKey = new Map<string, string>();
  /** Function tools for the upstream, in the order the client listed them. */
  readonly functions: ChatTool[] = [];
  /** Hosted tools (web_search…): only an upstream that speaks the Responses API can run them. */
  readonly hosted: Json[] = [];

  constructor(tools: readonly ResponsesTool[] = []) {
    const entries = new Map<string, Entry>(); // a tool listed twice (or loaded again by a search) is offered once
    for (const t of tools) this.collect(t, undefined, entries);
    // Names already valid as the client wrote them are given first, so that a tool keeps its own
    // name and one that had to be cleaned up (`srv__a.b` → `srv__a_b`) yields to it.
    const given = new Map<string, string>();
    for (const exact of [true, false]) {
      for (const [key, { target }] of entries) {
        const base = baseName(target);
        if ((base === joinedName(target)) !== exact) continue;
        let name = base;
        for (let n = 0; this.byName.has(name); n++) name = hashedName(base, key, n);
        this.byName.set(name, target);
        this.byKey.set(key, name);
        given.set(key, name);
      }
    }
    for (const [key, { spec }] of entries) this.functions.push({ type: 'function', function: { name: given.get(key)!, ...spec } });
  }

  /** The upstream name for `t`: the one it was given, or, for a tool not offered now (an old turn's), its base name. */
  nameOf(t: ToolTarget): string {
    return this.byKey.get(keyOf(t)) ?? baseName(t);
  }

  /** What an upstream's call of `name` stands for; a name svc never gave is a plain function of that name. */
  targetOf(name: string): ToolTarget {
    return this.byName.get(name) ?? { kind: 'function', name };
  }

  private collect(tool: ResponsesTool, namespace: string | undefined, into: Map<string, Entry>): void {
    const add = (target: ToolTarget, spec: Entry['spec']) => {
      if (!into.has(keyOf(target))) into.set(keyOf(target), { target, spec });
    };
    const described = (d: string | null | undefined) => (d ? { description: d } : {});
    const ns = namespace ? { namespace } : {};
    switch (tool.type) {
      case 'function': {
        const t = tool as Extract<ResponsesTool, { type: 'function' }>;
        add(
          { kind: 'function', name: t.name, ...ns },
          { ...described(t.description), ...(t.parameters ? { parameters: t.parameters } : {}), ...(typeof t.strict === 'boolean' ? { strict: t.strict } : {}) },
        );
        return;
      }
      case 'custom': {
        const t = tool as Extract<ResponsesTool, { type: 'custom' }>;
        add({ kind: 'custom', name: t.name, ...ns }, { description: customDescription(t), parameters: CUSTOM_PARAMETERS });
        return;
      }
      case 'namespace': {
        const t = tool as Extract<ResponsesTool, { type: 'namespace' }>;
        for (const inner of t.tools) this.collect(inner, t.name, into);
        return;
      }
      case 'tool_search': {
        const t = tool as Extract<ResponsesTool, { type: 'tool_search' }>;
        if (t.execution === 'client') {
          const parameters = t.parameters ?? { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] };
          add({ kind: 'tool_search' }, { ...described(t.description), parameters });
          return;
        }
        this.hosted.push(tool as Json);
        return;
      }
      default:
        this.hosted.push(tool as Json);
    }
  }

  /** The upstream names of the functions `tools` become (what a tool_search_output loaded). */
  namesFor(tools: readonly ResponsesTool[]): string[] {
    const loaded = new ToolMap(tools);
    return loaded.functions.map((f) => this.nameOf(loaded.targetOf(f.function.name)));
  }

  /** The hosted tools' types, once each, for the `x-svc-tools-omitted` header. */
  hostedTypes(): string[] {
    return [...new Set(this.hosted.map((t) => String(t.type)))];
  }

  /** The client item for an upstream's call of `name`: function_call, custom_tool_call or tool_search_call. */
  callItem(name: string, callId: string, args: string): Json {
    const t = this.targetOf(name);
    const ns = t.kind !== 'tool_search' && t.namespace ? { namespace: t.namespace } : {};
    if (t.kind === 'custom') return { type: 'custom_tool_call', call_id: callId, name: t.name, ...ns, input: customInput(args) };
    if (t.kind === 'tool_search') return { type: 'tool_search_call', call_id: callId, execution: 'client', arguments: searchArguments(args) };
    return { type: 'function_call', call_id: callId, name: t.name, ...ns, arguments: args };
  }

  /** A chat tool_choice for the Responses one; a hosted tool's (or an unknown form) is left to the model. */
  toolChoice(choice: NonNullable<ResponsesRequest['tool_choice']>): unknown {
    if (typeof choice === 'string') return choice;
    const ns = choice.namespace ? { namespace: choice.namespace } : {};
    if (choice.type === 'function' && choice.name) return { type: 'function', function: { name: this.nameOf({ kind: 'function', name: choice.name, ...ns }) } };
    if (choice.type === 'custom' && choice.name) return { type: 'function', function: { name: this.nameOf({ kind: 'custom', name: choice.name, ...ns }) } };
    return undefined;
  }
}

/**
 * The tools of a request: those it lists, then those its tool_search_output items loaded (Codex
 * offers an MCP server's tools through tool_search and does not list them again afterwards).
 */
export function toolMapOf(req: Pick<ResponsesRequest, 'tools' | 'input'>): ToolMap {
  const loaded = Array.isArray(req.input) ? (req.input as InputItem[]).flatMap((item) => (item.type === 'tool_search_output' ? item.tools : [])) : [];
  return new ToolMap([...(req.tools ?? []), ...loaded]);
}
