import type { ServerResponse } from 'node:http';
import type { App } from '../../app.js';
import type { Principal } from '../../kernel/auth.js';
import { uuidv7 } from '../../lib/ids.js';
import { sendOpenAiError } from './openai-errors.js';
import { orchestrate } from './orchestrator.js';
import type { ChatMessage, ChatRequest } from './schema.js';
import { failChat, finishChat, openEventStream, sendAnswer, upstreamBody, type ChatPlan } from './service.js';
import { complete, stream, UpstreamError } from './upstream.js';

// The chat-completions wire (POST /v1/chat/completions): what the agent path and the orchestrator
// say, framed as a chat completion or as `chat.completion.chunk` events ending with [DONE].

export interface ChatIo {
  app: App;
  plan: ChatPlan;
  body: ChatRequest;
  res: ServerResponse;
  signal: AbortSignal;
  principal: Principal | null;
}

function sseWrite(res: ServerResponse, payload: unknown): void {
  if (!res.writableEnded) res.write(`data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`);
}

/** An agent answers: the upstream's own completion or chunks are relayed, named with svc's model id. */
export async function agentCompletion({ app, plan, body, res, signal }: ChatIo): Promise<void> {
  if (!body.stream) {
    let answer;
    try {
      answer = await complete(plan.provider, upstreamBody(plan), signal, plan.created);
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      throw await failChat(app, plan, err);
    }
    const choice = answer.choices?.[0];
    await finishChat(app, plan, { finishReason: choice?.finish_reason ?? null, usage: answer.usage ?? null, reply: choice?.message ? [choice.message as ChatMessage] : [] });
    sendAnswer(res, plan, { ...answer, model: plan.modelId });
    return;
  }

  let opened = false;
  try {
    const result = await stream(plan.provider, upstreamBody(plan), signal, plan.created, (chunk) => {
      if (!opened) {
        openEventStream(res, plan);
        opened = true;
      }
      sseWrite(res, { ...chunk, model: plan.modelId });
    });
    if (!opened) openEventStream(res, plan);
    await finishChat(app, plan, {
      finishReason: result.finishReason,
      usage: result.usage,
      reply: [{ role: 'assistant', content: result.content || (result.toolCalls.length ? null : ''), ...(result.toolCalls.length ? { tool_calls: result.toolCalls } : {}) }],
    });
    sseWrite(res, '[DONE]');
    res.end();
  } catch (err) {
    if (signal.aborted) {
      await finishChat(app, plan, { finishReason: 'aborted', usage: null, reply: [], aborted: true });
      return;
    }
    if (!(err instanceof UpstreamError)) throw err;
    const failure = await failChat(app, plan, err);
    if (!opened) throw failure;
    // Headers are gone: the failure travels as a last chunk, as OpenAI's own streams do.
    sendOpenAiError(res, failure);
  }
}

/** The orchestrator answers: its loop's text as one completion, or as chunks while it comes. */
export async function orchestratorCompletion({ app, plan, body, res, signal, principal }: ChatIo): Promise<void> {
  const id = `chatcmpl-${uuidv7()}`;
  const { created } = plan;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: plan.modelId,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  let opened = false;
  const send = (payload: unknown) => {
    if (!opened) {
      openEventStream(res, plan);
      opened = true;
      sseWrite(res, chunk({ role: 'assistant', content: '' }));
    }
    sseWrite(res, payload);
  };

  let answer;
  try {
    answer = await orchestrate(app, plan, { stream: body.stream === true, onText: (content) => send(chunk({ content })), signal, principal });
  } catch (err) {
    if (!opened) throw err;
    sendOpenAiError(res, err);
    return;
  }
  if (!answer) return; // the client went away

  if (body.stream) {
    send(chunk({}, answer.finishReason));
    if (body.stream_options?.include_usage === true) send({ id, object: 'chat.completion.chunk', created, model: plan.modelId, choices: [], usage: answer.usage });
    send('[DONE]');
    res.end();
    return;
  }
  sendAnswer(res, plan, {
    id,
    object: 'chat.completion',
    created,
    model: plan.modelId,
    choices: [{ index: 0, message: { role: 'assistant', content: answer.content }, finish_reason: answer.finishReason }],
    ...(answer.usage ? { usage: answer.usage } : {}),
  });
}
