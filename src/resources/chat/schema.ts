import { z } from 'zod';
import type { StreamDef } from '../../kernel/route.js';
import { OpenAiErrorBody } from './openai-errors.js';

// The OpenAI chat-completions wire format, as much of it as svc reads. Objects are loose: OpenAI
// clients send fields this version does not know (and upstreams understand), and those are passed
// to the upstream unchanged. What svc itself reads is checked.

const ContentPart = z.looseObject({ type: z.string().min(1).max(64) });

export const ChatMessage = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string().max(1_000_000), z.array(ContentPart).max(1000), z.null()]).optional(),
  name: z.string().max(128).optional(),
  tool_calls: z
    .array(z.looseObject({ id: z.string().max(256), type: z.string().max(64), function: z.looseObject({ name: z.string().max(128), arguments: z.string().max(1_000_000) }) }))
    .max(128)
    .optional(),
  tool_call_id: z.string().max(256).optional(),
});

export const ChatRequest = z.looseObject({
  model: z.string().min(1).max(200).optional().describe("`provider/model`; with `agent`, the agent's own model wins. Other values ask for the default."),
  messages: z.array(ChatMessage).min(1).max(10_000),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  agent: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe("svc extension: the agent to talk to (its model, system prompt, identity and skills go upstream). Without it the project's orchestrator answers with management tools."),
  tools: z
    .array(z.looseObject({ type: z.string() }))
    .max(128)
    .optional(),
});

export type ChatMessage = z.output<typeof ChatMessage>;
export type ChatRequest = z.output<typeof ChatRequest>;

export const Usage = z.looseObject({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() });
export type Usage = z.output<typeof Usage>;

export const ChatCompletion = z.looseObject({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number(),
  model: z.string(),
  choices: z.array(z.looseObject({ index: z.number(), message: ChatMessage, finish_reason: z.string().nullable() })),
  usage: Usage.optional(),
});
export type ChatCompletion = z.output<typeof ChatCompletion>;

/** Session ids come from clients (x-session-id): printable, bounded. */
export const SessionId = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must be 1-128 letters, digits, ".", "_", ":" or "-"');

/** One chunk of a streamed completion (`stream: true`), as OpenAI sends it; an upstream's are passed on. */
export const ChatCompletionChunk = z.looseObject({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.number(),
  model: z.string(),
  choices: z
    .array(
      z.looseObject({
        index: z.number(),
        delta: z.looseObject({
          role: z.string().optional(),
          content: z.string().nullable().optional(),
          tool_calls: z
            .array(
              z.looseObject({
                index: z.number(),
                id: z.string().optional(),
                type: z.string().optional(),
                function: z.looseObject({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
              }),
            )
            .optional(),
        }),
        finish_reason: z.string().nullable(),
      }),
    )
    .describe('Empty in the usage chunk (`stream_options.include_usage`).'),
  usage: Usage.nullable().optional(),
});
export type ChatCompletionChunk = z.output<typeof ChatCompletionChunk>;

/** The Server-Sent Events a chat answers with `stream: true`: chunks, then `[DONE]`; or a last error frame. */
export const ChatCompletionStream = {
  data: z.union([ChatCompletionChunk, OpenAiErrorBody]),
  done: '[DONE]',
  description: 'With `stream: true`: the completion as chunks, then `data: [DONE]`. A failure after the stream started ends it with one OpenAI-shaped error frame instead, and no `[DONE]`.',
} satisfies StreamDef;
