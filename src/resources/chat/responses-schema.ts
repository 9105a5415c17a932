import { z } from 'zod';
import type { StreamDef } from '../../kernel/route.js';
import { SessionId } from './schema.js';

// The OpenAI Responses API wire (POST /v1/responses), as much of it as svc reads. Loose objects, as
// for chat: clients send fields this version does not know. What svc translates is checked.

const Part = z.looseObject({ type: z.string().min(1).max(64) });
const Text = z.string().max(1_000_000);
export const Content = z.union([Text, z.array(Part).max(1000)]);
const CallId = z.string().min(1).max(256);
const ToolName = z.string().min(1).max(128);
const Description = z.string().max(100_000).nullable().optional();
const JsonSchemaObject = z.record(z.string(), z.unknown());

// Tools. Every kind a chat model can be given is turned into function tools (svc calls every
// upstream as chat completions inside): functions as they are, a namespace's tools flattened, a
// custom (freeform) tool as a function of one string, a client-run tool_search as a function. Any
// other type is a hosted tool the upstream itself runs (web_search, file_search…).

export const FunctionTool = z.looseObject({
  type: z.literal('function'),
  name: ToolName,
  description: Description,
  parameters: JsonSchemaObject.nullable().optional(),
  strict: z.boolean().nullable().optional(),
});

export const CustomTool = z
  .looseObject({
    type: z.literal('custom'),
    name: ToolName,
    description: Description,
    format: z.looseObject({ type: z.string().max(64), syntax: z.string().max(64).optional(), definition: z.string().max(100_000).optional() }).optional(),
  })
  .describe("A freeform tool (Codex's apply_patch): the model is given a function of one string, `input`; its call comes back as a custom_tool_call item.");

export const NamespaceTool = z
  .looseObject({
    type: z.literal('namespace'),
    name: ToolName,
    description: Description,
    tools: z.array(z.discriminatedUnion('type', [FunctionTool, CustomTool])).max(512),
  })
  .describe("A group of tools (Codex: an MCP server's, its sub-agents'): flattened into functions named `<namespace>__<name>`; calls come back with `name` and `namespace`.");

export const ToolSearchTool = z
  .looseObject({
    type: z.literal('tool_search'),
    execution: z.enum(['client', 'server']).optional(),
    description: Description,
    parameters: JsonSchemaObject.nullable().optional(),
  })
  .describe(
    'With execution "client" (Codex), a function whose call comes back as a tool_search_call item; the tools a tool_search_output item loads are offered from then on. Otherwise a hosted tool.',
  );

const KnownTool = z.discriminatedUnion('type', [FunctionTool, CustomTool, NamespaceTool, ToolSearchTool]);
const KNOWN_TOOL_TYPES = new Set(['function', 'custom', 'namespace', 'tool_search']);

/** Any other type. A known type that is malformed fails here with that type's own issues. */
const HostedTool = z
  .looseObject({ type: z.string().min(1).max(64) })
  .superRefine((tool, ctx) => {
    if (!KNOWN_TOOL_TYPES.has(tool.type)) return;
    const r = KnownTool.safeParse(tool);
    for (const issue of r.error?.issues ?? []) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
  })
  .describe(
    "A hosted tool (web_search, file_search, code_interpreter…): sent to an upstream that speaks the Responses API; left out for a chat-completions upstream, the answer's `x-svc-tools-omitted` header naming it. Never refused.",
  );

export const ResponsesTool = z.union([KnownTool, HostedTool]);
export type ResponsesTool = z.output<typeof ResponsesTool>;

// Input items: what a client sends of the conversation (Codex sends all of it, every turn).

const MessageItem = z.looseObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: Content.optional(),
});
const FunctionCallItem = z.looseObject({ type: z.literal('function_call'), call_id: CallId, name: ToolName, namespace: ToolName.optional(), arguments: Text.optional() });
const FunctionCallOutputItem = z.looseObject({ type: z.literal('function_call_output'), call_id: CallId, output: Content.optional() });
const CustomToolCallItem = z.looseObject({ type: z.literal('custom_tool_call'), call_id: CallId, name: ToolName, namespace: ToolName.optional(), input: Text.optional() });
const CustomToolCallOutputItem = z.looseObject({ type: z.literal('custom_tool_call_output'), call_id: CallId, output: Content.optional() });
const ToolSearchCallItem = z.looseObject({ type: z.literal('tool_search_call'), call_id: CallId, arguments: z.unknown().optional() });
const ToolSearchOutputItem = z.looseObject({ type: z.literal('tool_search_output'), call_id: CallId.nullable().optional(), tools: z.array(ResponsesTool).max(512) });
const ReasoningItem = z.looseObject({ type: z.literal('reasoning') }).describe("A reasoning model's own notes: skipped, no chat model can be given them back.");

/** One item of `input`: a message (typed or not), a tool call the model made, or its output. */
export const InputItem = z.discriminatedUnion('type', [
  MessageItem,
  FunctionCallItem,
  FunctionCallOutputItem,
  CustomToolCallItem,
  CustomToolCallOutputItem,
  ToolSearchCallItem,
  ToolSearchOutputItem,
  ReasoningItem,
]);
export type InputItem = z.output<typeof InputItem>;

/**
 * Text or items. For an array the union's own issue would only say "Invalid input": the message
 * names the item and field at fault instead.
 */
const Input = z.union([Text, z.array(InputItem).max(10_000)], {
  error: (issue) => {
    if (issue.code !== 'invalid_union' || !Array.isArray(issue.input)) return undefined;
    const items = issue.errors.find((errs) => !errs.some((e) => e.path.length === 0));
    const first = items?.[0];
    if (!first) return undefined;
    const [index, ...field] = first.path;
    return `item ${String(index)}${field.length ? `, ${field.join('.')}` : ''}: ${first.message}`;
  },
});

export const ResponsesRequest = z.looseObject({
  model: z.string().min(1).max(200).optional().describe("`provider/model`; with `agent`, the agent's own model wins. Other values ask for the default."),
  input: Input.optional().describe('The new turn: text, or items (messages, tool calls and their outputs).'),
  instructions: Text.nullable().optional().describe('A system message for this response only (not carried to the next one).'),
  previous_response_id: SessionId.nullable().optional().describe('Continue the conversation through this stored response.'),
  store: z.boolean().optional().describe('Keep this response so previous_response_id can continue it (default true).'),
  stream: z.boolean().optional(),
  agent: z.string().min(1).max(64).optional().describe("svc extension: the agent to talk to. Without it the project's orchestrator answers with management tools."),
  tools: z.array(ResponsesTool).max(512).optional(),
  tool_choice: z.union([z.enum(['auto', 'none', 'required']), z.looseObject({ type: z.string().max(64), name: ToolName.optional(), namespace: ToolName.optional() })]).optional(),
  max_output_tokens: z.int().min(1).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  text: z
    .looseObject({ format: z.looseObject({ type: z.string().max(64) }).optional() })
    .nullable()
    .optional(),
  reasoning: z
    .looseObject({ effort: z.string().max(32).nullable().optional() })
    .nullable()
    .optional(),
  metadata: z.record(z.string().max(64), z.string().max(512)).nullable().optional(),
  background: z.boolean().nullable().optional(),
  user: z.string().max(256).optional(),
});
export type ResponsesRequest = z.output<typeof ResponsesRequest>;

const OutputItem = z.looseObject({ type: z.string(), id: z.string(), status: z.string() });

export const ResponseUsage = z.looseObject({
  input_tokens: z.number(),
  input_tokens_details: z.looseObject({ cached_tokens: z.number() }),
  output_tokens: z.number(),
  output_tokens_details: z.looseObject({ reasoning_tokens: z.number() }),
  total_tokens: z.number(),
});
export type ResponseUsage = z.output<typeof ResponseUsage>;

export const ResponseObject = z.looseObject({
  id: z.string(),
  object: z.literal('response'),
  created_at: z.number(),
  status: z.enum(['in_progress', 'completed', 'incomplete', 'failed']),
  model: z.string(),
  output: z.array(OutputItem),
  error: z.looseObject({ code: z.string(), message: z.string() }).nullable(),
  incomplete_details: z.looseObject({ reason: z.string() }).nullable(),
  previous_response_id: z.string().nullable(),
  usage: ResponseUsage.nullable(),
});
export type ResponseObject = z.output<typeof ResponseObject>;

/** One `response.*` event of a streamed Response (the SSE `event:` names the same type). */
export const ResponseStreamEvent = z.looseObject({
  type: z.string().describe('response.created, response.output_text.delta, response.completed, response.failed…'),
  sequence_number: z.number(),
  response: ResponseObject.optional().describe('On response.created, response.in_progress and the terminal events.'),
  output_index: z.number().optional(),
  item_id: z.string().optional(),
  delta: z.string().optional(),
});

/** The Server-Sent Events of `stream: true`: OpenAI's event types, no `[DONE]`. */
export const ResponseStream = {
  data: ResponseStreamEvent,
  description:
    'With `stream: true`: `event: <type>` / `data: {type, sequence_number, …}` pairs as OpenAI sends them, from response.created to response.completed (or response.incomplete); a failure after the stream started ends it with response.failed.',
} satisfies StreamDef;
export type OutputItem = z.output<typeof OutputItem>;

export const ModelList = z.object({
  object: z.literal('list'),
  data: z.array(z.object({ id: z.string().describe('`provider/model`, as `model` takes it'), object: z.literal('model'), created: z.number(), owned_by: z.string().describe('The provider') })),
});
export type ModelList = z.output<typeof ModelList>;
