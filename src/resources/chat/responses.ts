import type { ServerResponse } from 'node:http';
import type { App } from '../../app.js';
import type { Principal } from '../../kernel/auth.js';
import { AppError, toErrorResponse } from '../../kernel/errors.js';
import { uuidv7 } from '../../lib/ids.js';
import { isUsable, providers } from '../providers/service.js';
import { orchestrate } from './orchestrator.js';
import type { ModelList, ResponseObject, ResponsesRequest } from './responses-schema.js';
import { getResponse } from './responses-store.js';
import { toolMapOf } from './responses-tools.js';
import { ResponseBuilder, responseSkeleton, toChatRequest } from './responses-wire.js';
import type { ChatMessage } from './schema.js';
import { failChat, finishChat, openEventStream, planChat, sendAnswer, upstreamBody, type ChatPlan } from './service.js';
import { complete, stream, UpstreamError } from './upstream.js';

// The Responses wire (POST /v1/responses): the same agent path and orchestrator as chat
// completions, their answer built into a Response or streamed as `response.*` events.

export interface ResponsesIo {
  app: App;
  req: ResponsesRequest;
  res: ServerResponse;
  signal: AbortSignal;
  principal: Principal | null;
  sessionHeader: string | undefined;
  /** Codex's `thread-id` (or `session-id`): one session per thread, the client sending the whole conversation each time. */
  threadHeader?: string | undefined;
}

export async function serveResponse({ app, req, res, signal, principal, sessionHeader, threadHeader }: ResponsesIo): Promise<void> {
  const from = req.previous_response_id ? await getResponse(app.db, req.previous_response_id) : undefined;
  if (from === null) {
    throw new AppError('not_found', `Previous response "${req.previous_response_id}" not found: it was stored with store: false, or is older than the newest 10,000.`, {
      details: [{ path: 'body.previous_response_id', message: 'not found' }],
    });
  }
  const tools = toolMapOf(req);
  const byThread = sessionHeader === undefined && threadHeader !== undefined;
  const plan = await planChat(app, toChatRequest(req, tools), sessionHeader ?? threadHeader, from, { wholeConversation: byThread });
  if (tools.hosted.length) {
    // A Responses upstream runs hosted tools itself; inside svc a chat upstream has no way to (nor
    // the orchestrator, which gives the model its own tools instead of the client's).
    if (plan.agent && plan.provider.api === 'responses') plan.passthrough.tools = [...((plan.passthrough.tools as unknown[] | undefined) ?? []), ...tools.hosted];
    else plan.headers['x-svc-tools-omitted'] = tools.hostedTypes().join(', ');
  }
  if (!plan.messages.length)
    throw new AppError('invalid_request', 'input is empty and there is no previous_response_id to continue.', { details: [{ path: 'body.input', message: 'nothing to answer' }] });
  // Instructions hold for this response only: a system turn sent, never stored with the conversation.
  if (req.instructions) plan.system.push({ role: 'system', content: req.instructions });
  const id = `resp_${uuidv7().replaceAll('-', '')}`;
  if (req.store !== false) plan.responseId = id;

  const streamed = req.stream === true;
  let opened = false;
  const builder = new ResponseBuilder(
    responseSkeleton(req, id, plan.modelId, plan.created),
    streamed
      ? (type, data) => {
          if (res.writableEnded || res.destroyed) return;
          if (!opened) {
            openEventStream(res, plan);
            opened = true;
          }
          res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
        }
      : undefined,
    tools,
  );
  // response.created goes out with the first thing the model says: a failure before it is a plain 502.
  let started = false;
  const begin = () => {
    if (!started) builder.start();
    started = true;
  };

  let finished: ResponseObject;
  try {
    if (plan.agent) {
      finished = await agentTurn(app, plan, builder, begin, streamed, signal);
    } else {
      const answer = await orchestrate(app, plan, { stream: streamed, onText: (t) => (begin(), builder.addText(t)), signal, principal });
      if (!answer) return; // the client went away
      begin();
      if (!streamed) builder.addText(answer.content);
      finished = builder.finish(answer.finishReason, answer.usage);
    }
  } catch (err) {
    if (signal.aborted) return; // the client went away: nobody to tell
    if (!opened) throw err;
    const { body } = toErrorResponse(err);
    builder.fail(body.code, body.error);
    res.end();
    return;
  }
  if (streamed) res.end();
  else if (finished) sendAnswer(res, plan, finished);
}

/** An agent answers: its upstream's completion (or chunks) fed to the builder, the session kept. */
async function agentTurn(app: App, plan: ChatPlan, builder: ResponseBuilder, begin: () => void, streamed: boolean, signal: AbortSignal): Promise<ResponseObject> {
  try {
    if (!streamed) {
      const answer = await complete(plan.provider, upstreamBody(plan), signal, plan.created);
      const choice = answer.choices?.[0];
      const message = (choice?.message as ChatMessage | undefined) ?? { role: 'assistant', content: '' };
      await finishChat(app, plan, { finishReason: choice?.finish_reason ?? null, usage: answer.usage ?? null, reply: [message] });
      begin();
      if (typeof message.content === 'string') builder.addText(message.content);
      (message.tool_calls ?? []).forEach((c, index) => builder.addToolCall({ index, ...c }));
      return builder.finish(choice?.finish_reason ?? null, answer.usage ?? null);
    }
    const result = await stream(plan.provider, { ...upstreamBody(plan), stream_options: { include_usage: true } }, signal, plan.created, (chunk) => {
      const delta = (chunk.choices as { delta?: { content?: unknown; tool_calls?: unknown[] } }[] | undefined)?.[0]?.delta;
      if (typeof delta?.content === 'string' && delta.content) begin(), builder.addText(delta.content);
      for (const f of Array.isArray(delta?.tool_calls) ? delta.tool_calls : []) begin(), builder.addToolCall(f);
    });
    await finishChat(app, plan, {
      finishReason: result.finishReason,
      usage: result.usage,
      reply: [{ role: 'assistant', content: result.content || (result.toolCalls.length ? null : ''), ...(result.toolCalls.length ? { tool_calls: result.toolCalls } : {}) }],
    });
    begin();
    return builder.finish(result.finishReason, result.usage);
  } catch (err) {
    if (signal.aborted) {
      await finishChat(app, plan, { finishReason: 'aborted', usage: null, reply: [], aborted: true });
      throw err;
    }
    if (!(err instanceof UpstreamError)) throw err;
    throw await failChat(app, plan, err);
  }
}

/** The models of every provider that can be called now, as `provider/model`. */
export function listModels(app: App): ModelList {
  const seen = new Set<string>();
  const data: ModelList['data'] = [];
  for (const p of providers(app).values()) {
    if (!isUsable(p)) continue;
    for (const m of [p.defaultModel, ...p.models]) {
      const id = m ? `${p.id}/${m}` : null;
      if (!id || seen.has(id)) continue;
      seen.add(id);
      // created: svc cannot know when a provider made a model; 0 says so rather than invent a date.
      data.push({ id, object: 'model', created: 0, owned_by: p.id });
    }
  }
  return { object: 'list', data };
}
