import { z } from 'zod';
import type { StreamDef } from '../../kernel/route.js';
import { SessionId } from './schema.js';

// The OpenAI Responses API wire (POST /v1/responses), as much of it as svc reads. Loose objects, as
// for chat: clients send fields this version does not know. What svc translates is checked.

const Part = z.looseObject({ type: z.string().min(1).max(64) });
const Text = z.string().max(1_000_000);

/** One item of `input`: a message (typed or not), a function call the model made, or its output. */
export const InputItem = z.looseObject({
  type: z.string().min(1).max(64).optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']).optional(),
  content: z.union([Text, z.array(Part).max(1000)]).optional(),
  call_id: z.string().max(256).optional(),
  name: z.string().max(128).optional(),
  arguments: Text.optional(),
  output: z.union([Text, z.array(Part).max(1000)]).optional(),
});
export type InputItem = z.output<typeof InputItem>;

export const ResponsesRequest = z.looseObject({
  model: z.string().min(1).max(200).optional().describe('`provider/model`; with `agent`, the agent\'s own model wins. Other values ask for the default.'),
  input: z.union([Text, z.array(InputItem).max(10_000)]).optional().describe('The new turn: text, or items (messages, function_call, function_call_output).'),
  instructions: Text.nullable().optional().describe('A system message for this response only (not carried to the next one).'),
  previous_response_id: SessionId.nullable().optional().describe('Continue the conversation through this stored response.'),
  store: z.boolean().optional().describe('Keep this response so previous_response_id can continue it (default true).'),
  stream: z.boolean().optional(),
  agent: z.string().min(1).max(64).optional().describe('svc extension: the agent to talk to. Without it the project\'s orchestrator answers with management tools.'),
  tools: z.array(z.looseObject({ type: z.string().max(64), name: z.string().max(128).optional() })).max(128).optional(),
  tool_choice: z.union([z.enum(['auto', 'none', 'required']), z.looseObject({ type: z.string().max(64), name: z.string().max(128).optional() })]).optional(),
  max_output_tokens: z.int().min(1).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  text: z.looseObject({ format: z.looseObject({ type: z.string().max(64) }).optional() }).nullable().optional(),
  reasoning: z.looseObject({ effort: z.string().max(32).nullable().optional() }).nullable().optional(),
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
