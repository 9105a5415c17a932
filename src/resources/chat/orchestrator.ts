import { serviceKey, type App } from '../../app.js';
import type { Principal } from '../../kernel/auth.js';
import { toErrorResponse } from '../../kernel/errors.js';
import type { ChatMessage, Usage } from './schema.js';
import { failChat, finishChat, upstreamBody, type ChatPlan } from './service.js';
import type { ToolCall } from './tool-calls.js';
import { complete, stream, UpstreamError } from './upstream.js';

/** A tool the model may call: one of the agent tool registry's, as an OpenAI-style function that runs in-process. */
export interface FunctionTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
  /** Runs the tool; a refusal throws the AppError the REST call would have answered. */
  call(args: unknown): Promise<Record<string, unknown>>;
}

/**
 * The tools `principal` may use, bound to this daemon: the registry's (tools/functions.ts), which
 * is built on the resources and so sits above them; provided in daemon.ts.
 */
export const FUNCTION_TOOLS = serviceKey<(app: App, principal: Principal | null) => FunctionTool[]>('chat.functionTools');

const SYSTEM = [
  "You are the orchestrator of this project's team of AI coding agents, inside svc, its control plane.",
  'You manage the work through your tools: list, create and move tasks, look at missions, agents and skills, and request human approvals.',
  'Use the tools to do what the user asks rather than describing it. Tool results are JSON; an `error` field means the call failed and says why.',
  'When you are done, answer briefly and say exactly what you did (ids included).',
].join(' ');

function addUsage(total: Usage | null, u: Usage | null | undefined): Usage | null {
  if (!u) return total;
  if (!total) return { ...u };
  return { ...total, prompt_tokens: total.prompt_tokens + u.prompt_tokens, completion_tokens: total.completion_tokens + u.completion_tokens, total_tokens: total.total_tokens + u.total_tokens };
}

/** Runs one tool call; a failure becomes a result the model can read, never a failed chat. */
async function runTool(tools: readonly FunctionTool[], call: ToolCall): Promise<{ content: string; ok: boolean }> {
  const tool = tools.find((t) => t.name === call.function.name);
  if (!tool) return { ok: false, content: JSON.stringify({ error: { code: 'not_found', message: `No tool named "${call.function.name}".` } }) };
  let args: unknown;
  try {
    args = call.function.arguments.trim() ? JSON.parse(call.function.arguments) : {};
  } catch {
    return { ok: false, content: JSON.stringify({ error: { code: 'invalid_request', message: 'The arguments are not valid JSON.' } }) };
  }
  try {
    return { ok: true, content: JSON.stringify(await tool.call(args)) };
  } catch (err) {
    const { body } = toErrorResponse(err);
    return { ok: false, content: JSON.stringify({ error: { code: body.code, message: body.error, ...(body.details ? { details: body.details } : {}) } }) };
  }
}

export interface OrchestratorRun {
  /** Ask the upstream for a stream, and hand each piece of the answer's text to onText as it comes. */
  stream: boolean;
  onText?: (delta: string) => void;
  signal: AbortSignal;
  /** The caller's key: a `tools: "read"` key gets only the read-only tools, as over MCP. */
  principal: Principal | null;
}

export interface OrchestratorAnswer {
  /** The final answer's whole text, footer included. */
  content: string;
  finishReason: string;
  usage: Usage | null;
}

/**
 * The orchestrator's loop: ask the model, run the tools it calls (each emits its ordinary events),
 * give it the results, and repeat until it answers without tools or `orchestrator.maxTurns` is
 * reached. It knows no wire: the chat-completions and Responses routes frame what it says. The
 * session and completion:finished are written here; an upstream failure is written too, then
 * thrown as the AppError the client is told. Null when the client went away (nothing is kept).
 */
export async function orchestrate(app: App, plan: ChatPlan, run: OrchestratorRun): Promise<OrchestratorAnswer | null> {
  const tools = app.services.get(FUNCTION_TOOLS)(app, run.principal);
  const toolSpecs = tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
  const maxTurns = app.config().orchestrator.maxTurns;
  const system: ChatMessage = { role: 'system', content: SYSTEM };
  const turns: ChatMessage[] = [];
  const done: { tool: string; ok: boolean }[] = [];
  let usage: Usage | null = null;
  let finishReason: string | null = null;
  let content = '';

  try {
    for (let turn = 1; ; turn++) {
      const body = { ...upstreamBody(plan), messages: [system, ...plan.messages, ...turns], tools: toolSpecs, tool_choice: 'auto' };
      let message: ChatMessage;
      if (run.stream) {
        const r = await stream(plan.provider, { ...body, stream_options: { include_usage: true } }, run.signal, plan.created, (c) => {
          const delta = (c.choices as { delta?: { content?: unknown } }[] | undefined)?.[0]?.delta;
          if (typeof delta?.content === 'string' && delta.content) run.onText?.(delta.content);
        });
        usage = addUsage(usage, r.usage);
        finishReason = r.finishReason;
        message = { role: 'assistant', content: r.content || null, ...(r.toolCalls.length ? { tool_calls: r.toolCalls } : {}) };
      } else {
        const answer = await complete(plan.provider, body, run.signal, plan.created);
        usage = addUsage(usage, answer.usage);
        const choice = answer.choices?.[0];
        finishReason = choice?.finish_reason ?? null;
        message = (choice?.message as ChatMessage | undefined) ?? { role: 'assistant', content: '' };
      }
      turns.push(message);
      const calls = (message.tool_calls ?? []) as ToolCall[];
      if (!calls.length) {
        content = typeof message.content === 'string' ? message.content : '';
        break;
      }
      for (const call of calls) {
        const r = await runTool(tools, call);
        done.push({ tool: call.function.name, ok: r.ok });
        turns.push({ role: 'tool', tool_call_id: call.id, content: r.content });
      }
      if (turn >= maxTurns) {
        finishReason = 'length';
        content = `Stopped after ${maxTurns} tool turns (orchestrator.maxTurns).`;
        if (run.stream) run.onText?.(content);
        turns.push({ role: 'assistant', content });
        break;
      }
    }
  } catch (err) {
    if (run.signal.aborted) {
      await finishChat(app, plan, { finishReason: 'aborted', usage, reply: [], aborted: true });
      return null;
    }
    if (!(err instanceof UpstreamError)) throw err;
    throw await failChat(app, plan, err, usage);
  }

  // What was done, in words the user can check, whatever the model chose to say.
  if (done.length) {
    const footer = `\n\n[svc] Tool calls: ${done.map((d) => `${d.tool} (${d.ok ? 'ok' : 'failed'})`).join(', ')}.`;
    content += footer;
    if (run.stream) run.onText?.(footer);
    turns[turns.length - 1]!.content = content;
  }
  await finishChat(app, plan, { finishReason, usage, reply: turns });
  return { content, finishReason: finishReason ?? 'stop', usage };
}
