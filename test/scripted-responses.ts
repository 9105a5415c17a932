import { startFakeUpstream, type Recorded, type Scripted } from './fake-upstream.js';

// A scripted OpenAI Responses API on 127.0.0.1 for Codex (a model provider with wire_api
// "responses" and base_url `url`): each POST /v1/responses takes the next scripted turn, streamed
// as the API streams it (response.created, output_item.added/done per item, response.completed),
// and is recorded. Other requests are answered 404 and not recorded.

export type ResponseItem = Record<string, unknown> & { type: string };

export type ResponsesTurn =
  /** A response with these output items. */
  | { items: ResponseItem[]; usage?: { input?: number; cached?: number; output?: number } }
  /** A response that fails in the stream (response.failed) with this error. */
  | { failed: { code: string; message: string } }
  /** Headers, then silence: a model that never answers (a stall, a cancel). */
  | { hang: true }
  /** An API error: the status, its headers, an error body (Codex reads `error.type`, e.g. usage_limit_reached with resets_at). */
  | { status: number; headers?: Record<string, string>; error?: Record<string, unknown> };

let ids = 0;
const nextId = (prefix: string) => `${prefix}_${(++ids).toString().padStart(4, '0')}`;

export const message = (text: string): ResponseItem => ({ type: 'message', id: nextId('msg'), role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] });
export const reasoning = (text: string): ResponseItem => ({ type: 'reasoning', id: nextId('rs'), summary: [{ type: 'summary_text', text }] });
export const functionCall = (name: string, args: unknown, namespace?: string): ResponseItem => ({
  type: 'function_call',
  id: nextId('fc'),
  call_id: nextId('call'),
  name,
  ...(namespace ? { namespace } : {}),
  arguments: JSON.stringify(args),
});
/** Codex's shell tool. */
export const execCommand = (cmd: string): ResponseItem => functionCall('exec_command', { cmd });
/** Codex's freeform apply_patch tool (offered to models whose metadata Codex knows). */
export const applyPatch = (patch: string): ResponseItem => ({ type: 'custom_tool_call', id: nextId('ctc'), call_id: nextId('call'), name: 'apply_patch', input: patch });
/** A call of svc's MCP tool `tool` (Codex offers MCP tools in the namespace mcp__<server>). */
export const svcTool = (tool: string, args: unknown): ResponseItem => functionCall(tool, args, 'mcp__svc');

/** The SSE events of one streamed response. */
export function responseEvents(turn: Extract<ResponsesTurn, { items: ResponseItem[] }> | Extract<ResponsesTurn, { failed: unknown }>): unknown[] {
  const id = nextId('resp');
  const events: unknown[] = [{ type: 'response.created', response: { id, status: 'in_progress', output: [] } }];
  if ('failed' in turn) return [...events, { type: 'response.failed', response: { id, status: 'failed', error: turn.failed } }];
  turn.items.forEach((item, output_index) => {
    events.push({ type: 'response.output_item.added', output_index, item });
    events.push({ type: 'response.output_item.done', output_index, item });
  });
  const u = turn.usage ?? {};
  const usage = {
    input_tokens: u.input ?? 100,
    input_tokens_details: { cached_tokens: u.cached ?? 40 },
    output_tokens: u.output ?? 7,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: (u.input ?? 100) + (u.output ?? 7),
  };
  events.push({ type: 'response.completed', response: { id, status: 'completed', output: turn.items, usage } });
  return events;
}

const answer = (turn: ResponsesTurn): Scripted => {
  if ('hang' in turn) return { stream: [], stall: true };
  if ('status' in turn) return { status: turn.status, headers: turn.headers, json: { error: turn.error ?? { type: 'server_error', message: `scripted ${turn.status}` } } };
  return { stream: responseEvents(turn), events: true };
};

export interface ScriptedResponses {
  /** A model provider's base_url (ends in /v1). */
  url: string;
  /** The POST /v1/responses requests, in order (body: the Responses request). */
  requests: Recorded[];
  script(...turns: ResponsesTurn[]): void;
  /** Drops the turns not yet answered (FakeUpstream.forget). */
  forget(): void;
  close(): Promise<void>;
}

export async function startScriptedResponses(): Promise<ScriptedResponses> {
  const up = await startFakeUpstream({ scripted: (method, path) => method === 'POST' && path.startsWith('/v1/responses') });
  return { url: up.url, requests: up.requests, script: (...turns) => up.script(...turns.map(answer)), forget: () => up.forget(), close: () => up.close() };
}

/** Codex's `-c` options that make `url` its model provider (for runtime.args), the key read from env `keyVar`. */
export const codexProviderArgs = (url: string, keyVar = 'SCRIPTED_KEY'): string[] => [
  '-c',
  'model_provider="scripted"',
  '-c',
  'model_providers.scripted.name="scripted"',
  '-c',
  `model_providers.scripted.base_url="${url}"`,
  '-c',
  'model_providers.scripted.wire_api="responses"',
  '-c',
  `model_providers.scripted.env_key="${keyVar}"`,
  // A scripted error is meant to end the turn, not to be retried for a minute.
  '-c',
  'model_providers.scripted.request_max_retries=0',
  '-c',
  'model_providers.scripted.stream_max_retries=0',
];

/** The output a Responses request sent back for each tool call (function_call_output / custom_tool_call_output). */
export const toolOutputsOf = (r: Recorded): string[] =>
  (r.body?.input ?? []).filter((i: any) => typeof i.type === 'string' && i.type.endsWith('_call_output')).map((i: any) => (typeof i.output === 'string' ? i.output : JSON.stringify(i.output)));
