import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { route } from '../../app.js';
import { AppError } from '../../kernel/errors.js';
import { RAW_RESPONSE } from '../../kernel/route.js';
import { agentCompletion, orchestratorCompletion } from './completions.js';
import { openAiError } from './openai-errors.js';
import { listModels, serveResponse } from './responses.js';
import { ModelList, ResponseObject, ResponsesRequest, ResponseStream } from './responses-schema.js';
import { ChatCompletion, ChatCompletionStream, ChatRequest, SessionId } from './schema.js';
import { planChat } from './service.js';

/** One entry of GET /v1/models. */
const ModelObject = ModelList.shape.data.element;

const AgentHeader = z.string().min(1).max(64);

/** The headers both chat wires read: documented once for both operations. */
const CHAT_HEADERS = [
  { name: 'x-session-id', description: 'Continue this session (the x-session-id of an earlier answer); a new id starts one.', schema: SessionId },
  {
    name: 'x-svc-agent',
    description: "The agent to talk to, for clients that cannot add a body field (Codex: `http_headers` of its model provider); the body's `agent` wins.",
    schema: AgentHeader,
  },
];

/** Codex's own headers naming its thread: /v1/responses keeps one session per thread by them. */
const THREAD_HEADERS = [
  {
    name: 'thread-id',
    description:
      "Codex's thread: one session per thread (`session:started` once). The client sends the whole conversation each time, so the session's stored turns are not sent again; `x-session-id` wins when both are given.",
    schema: SessionId,
  },
  { name: 'session-id', description: 'Read as `thread-id` when that is absent (Codex sends both).', schema: SessionId },
];

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** What every chat call reads off the request: its headers, and an abort for when the client goes. */
function callOf(req: IncomingMessage, res: ServerResponse): { sessionHeader: string | undefined; agentHeader: string | undefined; signal: AbortSignal } {
  const sessionHeader = header(req, 'x-session-id');
  if (sessionHeader !== undefined && !SessionId.safeParse(sessionHeader).success) {
    throw new AppError('invalid_request', 'x-session-id must be 1-128 letters, digits, ".", "_", ":" or "-".', { details: [{ path: 'headers.x-session-id', message: 'invalid session id' }] });
  }
  const agentHeader = header(req, 'x-svc-agent');
  if (agentHeader !== undefined && !AgentHeader.safeParse(agentHeader).success) {
    throw new AppError('invalid_request', 'x-svc-agent must be an agent name of 1-64 characters.', { details: [{ path: 'headers.x-svc-agent', message: 'invalid agent name' }] });
  }
  // A client that goes away aborts the upstream call: nobody is left to pay for.
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  return { sessionHeader, agentHeader, signal: abort.signal };
}

/** Codex's thread id, from `thread-id` or else `session-id`; refused when it is not a session id. */
function threadOf(req: IncomingMessage): string | undefined {
  for (const { name } of THREAD_HEADERS) {
    const v = header(req, name);
    if (v === undefined) continue;
    if (!SessionId.safeParse(v).success) {
      throw new AppError('invalid_request', `${name} must be 1-128 letters, digits, ".", "_", ":" or "-".`, { details: [{ path: `headers.${name}`, message: 'invalid session id' }] });
    }
    return v;
  }
  return undefined;
}

export const chatRoutes = [
  route({
    method: 'POST',
    path: '/v1/chat/completions',
    operationId: 'createChatCompletion',
    summary: 'OpenAI-compatible chat completion, plain or streamed (talk to an agent, or to the orchestrator)',
    description:
      'The OpenAI wire format: official OpenAI clients work unchanged. With `agent` (an svc extension) the agent answers: its model, system prompt, identity and assigned skills go upstream. ' +
      "Without it the project's orchestrator answers with management tools the daemon runs itself (tasks, missions, approvals, agents, skills). " +
      "`x-session-id` continues a session (stored with every configured secret redacted); the answer carries it. Every failure on this path, the Host and Origin guards' 403 and the 405 included, is `{error: {message, type, code, param}}`, an upstream's text scrubbed of secrets.",
    tag: 'Chat',
    errors: ['not_found', 'conflict', 'upstream_error', 'unavailable'],
    body: ChatRequest,
    requestHeaders: CHAT_HEADERS,
    response: ChatCompletion,
    rawContentType: 'application/json',
    stream: ChatCompletionStream,
    errorBody: openAiError,
    handler: async ({ app, body: asked, req, res, principal }): Promise<typeof RAW_RESPONSE> => {
      const { sessionHeader, agentHeader, signal } = callOf(req, res);
      const body = asked.agent === undefined && agentHeader !== undefined ? { ...asked, agent: agentHeader } : asked;
      const plan = await planChat(app, body, sessionHeader);
      const io = { app, plan, body, res, signal, principal };
      await (body.agent ? agentCompletion(io) : orchestratorCompletion(io));
      return RAW_RESPONSE;
    },
  }),
  route({
    method: 'POST',
    path: '/v1/responses',
    operationId: 'createResponse',
    summary: 'OpenAI Responses API, plain or streamed (talk to an agent, or to the orchestrator)',
    description:
      'The OpenAI Responses wire: `client.responses.create` from the official packages (and Codex) works unchanged. `agent`, the orchestrator, providers and sessions work as for chat completions; ' +
      'the answer is a Response, or `response.*` Server-Sent Events. `previous_response_id` continues the conversation through a stored response (`store: false` keeps none). ' +
      '`input` items: messages, function_call, custom_tool_call, tool_search_call and their outputs (reasoning items are skipped). Tools: functions; namespaces, custom (freeform) tools and a client-run tool_search are given to a chat model as functions and their calls come back as the items the client expects; ' +
      'hosted tools (web_search…) go to an upstream that speaks the Responses API, and are left out for a chat-completions upstream (`x-svc-tools-omitted` names them). Failures are `{error: {message, type, code, param}}`.',
    tag: 'Chat',
    errors: ['not_found', 'conflict', 'upstream_error', 'unavailable'],
    body: ResponsesRequest,
    requestHeaders: [...CHAT_HEADERS, ...THREAD_HEADERS],
    response: ResponseObject,
    rawContentType: 'application/json',
    stream: ResponseStream,
    errorBody: openAiError,
    handler: async ({ app, body, req, res, principal }): Promise<typeof RAW_RESPONSE> => {
      const { sessionHeader, agentHeader, signal } = callOf(req, res);
      const asked = body.agent === undefined && agentHeader !== undefined ? { ...body, agent: agentHeader } : body;
      await serveResponse({ app, req: asked, res, signal, principal, sessionHeader, threadHeader: threadOf(req) });
      return RAW_RESPONSE;
    },
  }),
  route({
    method: 'GET',
    path: '/v1/models',
    operationId: 'listModels',
    summary: 'The models of every provider that can be called now, as provider/model (OpenAI shape)',
    description: 'Each usable provider (a key set, or keyless) contributes its default model and `models` from project.json; `created` is 0.',
    tag: 'Chat',
    response: ModelList,
    rawContentType: 'application/json',
    errorBody: openAiError,
    handler: ({ app, res }) => sendJson(res, listModels(app)),
  }),
  route({
    method: 'GET',
    path: '/v1/models/{model}',
    operationId: 'retrieveModel',
    summary: 'One model of GET /v1/models, by its provider/model id (OpenAI shape: `client.models.retrieve`)',
    description:
      'The id has a slash: OpenAI clients send it encoded as one path segment (`/v1/models/openai%2Fgpt-4o`). ' +
      'A model that GET /v1/models does not list (an unknown provider, one without a key, a model it does not name) is 404 not_found.',
    tag: 'Chat',
    errors: ['not_found'],
    params: z.strictObject({ model: z.string().min(1).max(300).describe('`provider/model`, as GET /v1/models lists it.') }),
    response: ModelObject,
    rawContentType: 'application/json',
    errorBody: openAiError,
    handler: ({ app, params, res }) => {
      const model = listModels(app).data.find((m) => m.id === params.model);
      if (!model) throw new AppError('not_found', `Model "${params.model}" is not served here: GET /v1/models lists the models of the providers that can be called now.`);
      return sendJson(res, model);
    },
  }),
];

/** An answer in OpenAI's own shape, without svc's envelope. */
function sendJson(res: ServerResponse, value: unknown): typeof RAW_RESPONSE {
  const text = JSON.stringify(value);
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
  return RAW_RESPONSE;
}
