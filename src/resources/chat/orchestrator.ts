import type { ServerResponse } from 'node:http';
import type { App } from '../../app.js';
import type { Principal } from '../../kernel/auth.js';
import { toErrorResponse } from '../../kernel/errors.js';
import { uuidv7 } from '../../lib/ids.js';
import { functionTools, type FunctionTool } from '../../tools/functions.js';
import { sendOpenAiError } from './openai-errors.js';
import type { ChatMessage, Usage } from './schema.js';
import { failChat, finishChat, openEventStream, upstreamBody, type ChatPlan } from './service.js';
import { complete, stream, UpstreamError } from './upstream.js';

const SYSTEM = [
  'You are the orchestrator of this project\'s team of AI coding agents, inside svc, its control plane.',
  'You manage the work through your tools: list, create and move tasks, look at missions, agents and skills, and request human approvals.',
  'Use the tools to do what the user asks rather than describing it. Tool results are JSON; an `error` field means the call failed and says why.',
  'When you are done, answer briefly and say exactly what you did (ids included).',
].join(' ');

type ToolCall = NonNullable<ChatMessage['tool_calls']>[number];

/** Streamed tool calls arrive as fragments keyed by index; this puts them back together. */
function mergeToolCalls(fragments: unknown[]): ToolCall[] {
  const byIndex = new Map<number, ToolCall>();
  for (const f of fragments as { index?: number; id?: string; function?: { name?: string; arguments?: string } }[]) {
    const i = typeof f.index === 'number' ? f.index : byIndex.size;
    const call: ToolCall = byIndex.get(i) ?? { id: '', type: 'function', function: { name: '', arguments: '' } };
    if (f.id) call.id = f.id;
    if (f.function?.name) call.function.name += f.function.name;
    if (f.function?.arguments) call.function.arguments += f.function.arguments;
    byIndex.set(i, call);
  }
  return [...byIndex.values()];
}

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

export interface OrchestratorIo {
  stream: boolean;
  includeUsage: boolean;
  res: ServerResponse;
  signal: AbortSignal;
  /** The caller's key: a `tools: "read"` key gets only the read-only tools, as over MCP. */
  principal: Principal | null;
}

/**
 * The orchestrator's loop: ask the model, run the tools it calls (each emits its ordinary events),
 * give it the results, and repeat until it answers without tools or `orchestrator.maxTurns` is
 * reached. Content is streamed to the client as it arrives when the client asked for a stream.
 */
export async function runOrchestrator(app: App, plan: ChatPlan, io: OrchestratorIo): Promise<void> {
  const tools = functionTools(app, io.principal);
  const toolSpecs = tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
  const maxTurns = app.config().orchestrator.maxTurns;
  const id = `chatcmpl-${uuidv7()}`;
  const created = Math.floor(Date.now() / 1000);
  const system: ChatMessage = { role: 'system', content: SYSTEM };
  const turns: ChatMessage[] = [];
  const done: { tool: string; ok: boolean }[] = [];
  let usage: Usage | null = null;
  let finishReason: string | null = null;
  let content = '';
  let opened = false;

  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id, object: 'chat.completion.chunk', created, model: plan.modelId, choices: [{ index: 0, delta, finish_reason: finish }] });
  const send = (payload: unknown) => {
    if (!opened) {
      openEventStream(io.res, plan);
      opened = true;
      io.res.write(`data: ${JSON.stringify(chunk({ role: 'assistant', content: '' }))}\n\n`);
    }
    io.res.write(`data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`);
  };

  try {
    for (let turn = 1; ; turn++) {
      const body = { ...upstreamBody(plan), messages: [system, ...plan.messages, ...turns], tools: toolSpecs, tool_choice: 'auto' };
      let message: ChatMessage;
      if (io.stream) {
        const r = await stream(plan.provider, { ...body, stream_options: { include_usage: true } }, io.signal, (c) => {
          const delta = (c.choices as { delta?: { content?: unknown } }[] | undefined)?.[0]?.delta;
          if (typeof delta?.content === 'string' && delta.content) send(chunk({ content: delta.content }));
        });
        usage = addUsage(usage, r.usage);
        finishReason = r.finishReason;
        const calls = mergeToolCalls(r.toolCalls);
        message = { role: 'assistant', content: r.content || null, ...(calls.length ? { tool_calls: calls } : {}) };
      } else {
        const answer = await complete(plan.provider, body, io.signal);
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
        if (io.stream) send(chunk({ content }));
        turns.push({ role: 'assistant', content });
        break;
      }
    }
  } catch (err) {
    if (io.signal.aborted) {
      finishChat(app, plan, { finishReason: 'aborted', usage, reply: [], aborted: true });
      return;
    }
    if (!(err instanceof UpstreamError)) throw err;
    const failure = failChat(app, plan, err, usage);
    if (!opened) throw failure;
    sendOpenAiError(io.res, failure);
    return;
  }

  // What was done, in words the user can check, whatever the model chose to say.
  if (done.length) {
    const footer = `\n\n[svc] Tool calls: ${done.map((d) => `${d.tool} (${d.ok ? 'ok' : 'failed'})`).join(', ')}.`;
    content += footer;
    if (io.stream) send(chunk({ content: footer }));
    const last = turns[turns.length - 1]!;
    last.content = content;
  }
  finishChat(app, plan, { finishReason, usage, reply: turns });

  if (io.stream) {
    send(chunk({}, finishReason ?? 'stop'));
    if (io.includeUsage) send({ id, object: 'chat.completion.chunk', created, model: plan.modelId, choices: [], usage });
    send('[DONE]');
    io.res.end();
    return;
  }
  const text = JSON.stringify({
    id,
    object: 'chat.completion',
    created,
    model: plan.modelId,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: finishReason ?? 'stop' }],
    ...(usage ? { usage } : {}),
  });
  io.res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'x-session-id': plan.sessionId });
  io.res.end(text);
}
