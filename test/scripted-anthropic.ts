import { startFakeUpstream, type Recorded, type Scripted } from './fake-upstream.js';

// A scripted Anthropic Messages API on 127.0.0.1 for Claude Code (ANTHROPIC_BASE_URL = `baseUrl`,
// any ANTHROPIC_API_KEY): each POST /v1/messages takes the next scripted turn, streamed as the
// API streams it (named SSE events, message_start … message_stop), and is recorded. Other
// requests (Claude Code probes `HEAD /`) are answered 404 and not recorded.

export type Block = { type: 'text'; text: string } | { type: 'thinking'; thinking: string } | { type: 'tool_use'; id: string; name: string; input: unknown };

export type AnthropicTurn =
  /** One assistant message with these content blocks (a tool_use block makes its stop reason tool_use). */
  | { blocks: Block[]; usage?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number } }
  /** Headers, then silence: a model that never answers (a stall, a cancel). */
  | { hang: true }
  /** An API error: the status, its headers (retry-after, anthropic-ratelimit-*), an error body. */
  | { status: number; headers?: Record<string, string>; error?: { type: string; message: string } };

let ids = 0;
const nextId = (prefix: string) => `${prefix}_${(++ids).toString().padStart(4, '0')}`;

export const text = (t: string): Block => ({ type: 'text', text: t });
export const thinking = (t: string): Block => ({ type: 'thinking', thinking: t });
export const toolUse = (name: string, input: unknown): Block => ({ type: 'tool_use', id: nextId('toolu'), name, input });
export const write = (file_path: string, content: string): Block => toolUse('Write', { file_path, content });
export const bash = (command: string): Block => toolUse('Bash', { command, description: 'scripted' });
/** A call of svc's MCP tool `tool` (Claude Code names it mcp__svc__<tool>). */
export const svcTool = (tool: string, input: unknown): Block => toolUse(`mcp__svc__${tool}`, input);

/** The SSE events of one streamed message. */
export function messageEvents(blocks: Block[], usage: Extract<AnthropicTurn, { blocks: Block[] }>['usage'] = {}): unknown[] {
  const events: unknown[] = [
    {
      type: 'message_start',
      message: {
        id: nextId('msg'),
        type: 'message',
        role: 'assistant',
        model: 'scripted',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.input ?? 10, output_tokens: 1, cache_read_input_tokens: usage.cacheRead ?? 0, cache_creation_input_tokens: usage.cacheWrite ?? 0 },
      },
    },
  ];
  blocks.forEach((b, index) => {
    if (b.type === 'text') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: b.text } });
    } else if (b.type === 'thinking') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      events.push({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: b.thinking } });
      events.push({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: 'scripted' } });
    } else {
      events.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
      events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } });
    }
    events.push({ type: 'content_block_stop', index });
  });
  const stop = blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
  events.push({ type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output ?? 5 } });
  events.push({ type: 'message_stop' });
  return events;
}

const answer = (turn: AnthropicTurn): Scripted => {
  if ('hang' in turn) return { stream: [], stall: true };
  if ('status' in turn) return { status: turn.status, headers: turn.headers, json: { type: 'error', error: turn.error ?? { type: 'api_error', message: `scripted ${turn.status}` } } };
  return { stream: messageEvents(turn.blocks, turn.usage), events: true };
};

export interface ScriptedAnthropic {
  /** For ANTHROPIC_BASE_URL (no /v1: Claude Code adds it). */
  baseUrl: string;
  /** The POST /v1/messages requests, in order (body: the Messages request). */
  requests: Recorded[];
  script(...turns: AnthropicTurn[]): void;
  /** Drops the turns not yet answered (FakeUpstream.forget). */
  forget(): void;
  close(): Promise<void>;
}

export async function startScriptedAnthropic(): Promise<ScriptedAnthropic> {
  const up = await startFakeUpstream({ scripted: (method, path) => method === 'POST' && path.startsWith('/v1/messages') && !path.startsWith('/v1/messages/count_tokens') });
  return {
    baseUrl: up.url.replace(/\/v1$/, ''),
    requests: up.requests,
    script: (...turns) => up.script(...turns.map(answer)),
    forget: () => up.forget(),
    close: () => up.close(),
  };
}

/** The text of every tool_result a Messages request carries (what the CLI sent back to the model). */
export const toolResultsOf = (r: Recorded): string[] =>
  (r.body?.messages ?? []).flatMap((m: any) =>
    Array.isArray(m.content) ? m.content.filter((c: any) => c.type === 'tool_result').map((c: any) => (typeof c.content === 'string' ? c.content : JSON.stringify(c.content))) : [],
  );
