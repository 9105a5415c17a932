import type { ServerResponse } from 'node:http';
import { route } from '../../app.js';
import { AppError } from '../../kernel/errors.js';
import { RAW_RESPONSE } from '../../kernel/route.js';
import { openAiError, sendOpenAiError } from './openai-errors.js';
import { runOrchestrator } from './orchestrator.js';
import { ChatCompletion, ChatCompletionStream, ChatRequest, SessionId, type ChatMessage } from './schema.js';
import { failChat, finishChat, openEventStream, planChat, upstreamBody } from './service.js';
import { complete, stream, UpstreamError } from './upstream.js';

function sseWrite(res: ServerResponse, payload: unknown): void {
  if (!res.writableEnded) res.write(`data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`);
}


export const chatRoutes = [
  route({
    method: 'POST',
    path: '/v1/chat/completions',
    operationId: 'createChatCompletion',
    summary: 'OpenAI-compatible chat completion, plain or streamed (talk to an agent, or to the orchestrator)',
    description:
      'The OpenAI wire format: official OpenAI clients work unchanged. With `agent` (an svc extension) the agent answers: its model, system prompt, identity and assigned skills go upstream. ' +
      'Without it the project\'s orchestrator answers with management tools the daemon runs itself (tasks, missions, approvals, agents, skills). ' +
      '`x-session-id` continues a session (stored with every configured secret redacted); the answer carries it. Every failure on this path, the Host and Origin guards\' 403 and the 405 included, is `{error: {message, type, code, param}}`, an upstream\'s text scrubbed of secrets.',
    tag: 'Chat',
    errors: ['not_found', 'conflict', 'upstream_error', 'unavailable'],
    body: ChatRequest,
    response: ChatCompletion,
    rawContentType: 'application/json',
    stream: ChatCompletionStream,
    errorBody: openAiError,
    handler: async ({ app, body, req, res, principal }): Promise<typeof RAW_RESPONSE> => {
      const header = req.headers['x-session-id'];
      const sessionHeader = Array.isArray(header) ? header[0] : header;
      if (sessionHeader !== undefined && !SessionId.safeParse(sessionHeader).success) {
        throw new AppError('invalid_request', 'x-session-id must be 1-128 letters, digits, ".", "_", ":" or "-".', { details: [{ path: 'headers.x-session-id', message: 'invalid session id' }] });
      }
      const plan = planChat(app, body, sessionHeader);
      // A client that goes away aborts the upstream call: nobody is left to pay for.
      const abort = new AbortController();
      res.on('close', () => {
        if (!res.writableFinished) abort.abort();
      });

      if (!body.agent) {
        await runOrchestrator(app, plan, { stream: body.stream === true, includeUsage: body.stream_options?.include_usage === true, res, signal: abort.signal, principal });
        return RAW_RESPONSE;
      }

      if (!body.stream) {
        let answer;
        try {
          answer = await complete(plan.provider, upstreamBody(plan), abort.signal);
        } catch (err) {
          if (!(err instanceof UpstreamError)) throw err;
          throw failChat(app, plan, err);
        }
        const choice = answer.choices?.[0];
        finishChat(app, plan, { finishReason: choice?.finish_reason ?? null, usage: answer.usage ?? null, reply: choice?.message ? [choice.message as ChatMessage] : [] });
        const text = JSON.stringify({ ...answer, model: plan.modelId });
        res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'x-session-id': plan.sessionId });
        res.end(text);
        return RAW_RESPONSE;
      }

      let opened = false;
      try {
        const result = await stream(plan.provider, upstreamBody(plan), abort.signal, (chunk) => {
          if (!opened) {
            openEventStream(res, plan);
            opened = true;
          }
          sseWrite(res, { ...chunk, model: plan.modelId });
        });
        if (!opened) openEventStream(res, plan);
        finishChat(app, plan, {
          finishReason: result.finishReason,
          usage: result.usage,
          reply: [{ role: 'assistant', content: result.content, ...(result.toolCalls.length ? { tool_calls: result.toolCalls as ChatMessage['tool_calls'] } : {}) }],
        });
        sseWrite(res, '[DONE]');
        res.end();
      } catch (err) {
        if (abort.signal.aborted) {
          finishChat(app, plan, { finishReason: 'aborted', usage: null, reply: [], aborted: true });
          return RAW_RESPONSE;
        }
        if (!(err instanceof UpstreamError)) throw err;
        const failure = failChat(app, plan, err);
        if (!opened) throw failure;
        // Headers are gone: the failure travels as a last chunk, as OpenAI's own streams do.
        sendOpenAiError(res, failure);
      }
      return RAW_RESPONSE;
    },
  }),
];
