import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { App } from '../../app.js';
import { AppError } from '../../kernel/errors.js';
import { monotonic } from '../../lib/clock.js';
import { uuidv7 } from '../../lib/ids.js';
import { nowIso } from '../../lib/time.js';
import { configuredSecrets } from '../../secrets.js';
import { getAgent } from '../agents/service.js';
import { blockedUntil, isUsable, providers, recordUpstream, splitModelId, type Provider } from '../providers/service.js';
import { getSkill } from '../skills/service.js';
import { agentSystemMessage } from './prompt.js';
import type { ChatMessage, ChatRequest, Usage } from './schema.js';
import { saveResponse, type StoredResponse } from './responses-store.js';
import { getSession, saveSession, type Session } from './sessions.js';
import type { UpstreamError } from './upstream.js';

/** Everything one chat call needs, decided before the upstream is called. */
export interface ChatPlan {
  sessionId: string;
  newSession: boolean;
  agent: string | null;
  /** `provider/model`, as svc names it. */
  modelId: string;
  provider: Provider;
  /** The model name the upstream knows. */
  upstreamModel: string;
  /** What the upstream is sent, before the conversation so far. */
  system: ChatMessage[];
  /** The session's earlier turns followed by this request's messages. */
  messages: ChatMessage[];
  /** This request's own messages (what the session gains besides the answer). */
  added: ChatMessage[];
  /** Request fields passed through unchanged (temperature, tools…). */
  passthrough: Record<string, unknown>;
  /** When the call began, on the daemon's clock, in Unix seconds: the answer's `created` (OpenAI's). */
  created: number;
  /** When the call began (monotonic): its duration, for completion:finished. */
  started: number;
  /** Set by POST /v1/responses when the answer is stored: previous_response_id continues from it. */
  responseId: string | null;
  /** Headers the answer carries besides x-session-id (x-svc-tools-omitted). */
  headers: Record<string, string>;
}

const OWN_FIELDS = new Set(['model', 'messages', 'stream', 'stream_options', 'agent']);

function modelIdFor(app: App, body: ChatRequest, agentModel: string | null): string {
  const config = app.config();
  const asked = body.model && splitModelId(body.model) ? body.model : null;
  const chosen = agentModel ?? (body.agent ? asked : (config.orchestrator.model ?? asked));
  if (chosen) return chosen;
  // No model named anywhere: the first provider that can be called, with its default model.
  for (const p of providers(app).values()) {
    if (p.key !== null && p.defaultModel) return `${p.id}/${p.defaultModel}`;
  }
  throw new AppError(
    'invalid_request',
    body.agent
      ? `Agent "${body.agent}" has no model: set one (svc agents set ${body.agent} --model provider/model) or pass model as provider/model.`
      : 'No model to answer with: set orchestrator.model in project.json, pass model as provider/model, or export a provider key such as OPENAI_API_KEY.',
    { details: [{ path: 'body.model', message: 'no model' }] },
  );
}

/** Picks the provider for `provider/model`, stepping around one that is cooling down. */
async function pickProvider(app: App, modelId: string): Promise<{ provider: Provider; upstreamModel: string }> {
  const parts = splitModelId(modelId);
  const all = providers(app);
  if (!parts) throw new AppError('invalid_request', `Model "${modelId}" is not of the form provider/model.`, { details: [{ path: 'body.model', message: 'must be provider/model' }] });
  const provider = all.get(parts.provider);
  if (!provider) {
    throw new AppError('invalid_request', `Unknown provider "${parts.provider}" in model "${modelId}"; known: ${[...all.keys()].join(', ')}. Add it under providers in project.json.`, {
      details: [{ path: 'body.model', message: 'unknown provider' }],
    });
  }
  if (!isUsable(provider)) {
    throw new AppError('invalid_request', `Provider "${provider.id}" has no key: set ${provider.envVar} in the daemon's environment (or ${provider.configKey} in project.json) and try again.`, {
      details: [{ path: 'body.model', message: `set ${provider.envVar}` }],
    });
  }
  const now = app.clock.now();
  const until = await blockedUntil(app, provider.id, now);
  if (until === null) return { provider, upstreamModel: parts.model };
  // Another configured provider that lists the same model serves it meanwhile.
  const waiting: string[] = [];
  let earliest = until;
  for (const other of all.values()) {
    if (other.id === provider.id || !isUsable(other)) continue;
    const upstreamModel = other.models.includes(parts.model) ? parts.model : other.models.includes(modelId) ? modelId : null;
    if (upstreamModel === null) continue;
    const otherUntil = await blockedUntil(app, other.id, now);
    if (otherUntil === null) return { provider: other, upstreamModel };
    waiting.push(`"${other.id}", which serves it too, until ${new Date(otherUntil).toISOString()}`);
    earliest = Math.min(earliest, otherUntil);
  }
  // Retry-After is when the first of them can be called: a client that waits that long is served.
  const seconds = Math.max(1, Math.ceil((earliest - now) / 1000));
  const others = waiting.length ? `; ${waiting.join('; ')}` : '';
  throw new AppError('unavailable', `Provider "${provider.id}" is cooling down after upstream errors until ${new Date(until).toISOString()}${others}; see GET /api/v1/auth/status.`, {
    headers: { 'Retry-After': String(seconds) },
  });
}

/**
 * Decides a call. The conversation so far is the session named by `sessionHeader`, or, for the
 * Responses API's previous_response_id, the stored response `from` (which continues its session).
 * With `wholeConversation` the request carries the whole conversation itself (Codex, keyed by its
 * thread id): the session is named, kept and replaced, but its stored turns are not sent again.
 */
export async function planChat(app: App, body: ChatRequest, sessionHeader: string | undefined, from?: StoredResponse, opts: { wholeConversation?: boolean } = {}): Promise<ChatPlan> {
  const agent = body.agent ? await getAgent(app.db, body.agent) : null;
  if (body.agent && !agent) throw new AppError('not_found', `Agent "${body.agent}" not found.`);
  const session: Session | null = from ? { id: from.sessionId, agent: from.agent, model: from.model, messages: from.messages } : sessionHeader ? await getSession(app.db, sessionHeader) : null;
  if (session && session.agent !== (agent?.name ?? null)) {
    const what = from ? `Response "${from.id}"` : `Session "${session.id}"`;
    throw new AppError(
      'conflict',
      `${what} belongs to ${session.agent ? `agent "${session.agent}"` : 'the orchestrator'}; start a new ${from ? 'conversation' : 'session'} to talk to ${agent ? `"${agent.name}"` : 'the orchestrator'}.`,
    );
  }
  const modelId = modelIdFor(app, body, agent?.model ?? null);
  const { provider, upstreamModel } = await pickProvider(app, modelId);
  const system: ChatMessage[] = [];
  if (agent) {
    const skills: { name: string; description: string | null; content: string }[] = [];
    for (const name of agent.skills) {
      try {
        const s = await getSkill(app, name);
        if (!s.error) skills.push({ name: s.name, description: s.description, content: s.content });
      } catch {
        // assigned but gone from disk: nothing to send
      }
    }
    system.push({ role: 'system', content: agentSystemMessage(agent, skills) });
  }
  const passthrough: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (!OWN_FIELDS.has(k)) passthrough[k] = v;
  if (body.stream && body.stream_options) passthrough.stream_options = body.stream_options;
  return {
    sessionId: session?.id ?? sessionHeader ?? uuidv7(),
    newSession: !session || (!!from && !(await getSession(app.db, from.sessionId))),
    agent: agent?.name ?? null,
    modelId,
    provider,
    upstreamModel,
    system,
    messages: from || !opts.wholeConversation ? [...(session?.messages ?? []), ...body.messages] : body.messages,
    added: body.messages,
    passthrough,
    created: Math.floor(app.clock.now() / 1000),
    started: monotonic(),
    responseId: null,
    headers: {},
  };
}

export interface ChatOutcome {
  finishReason: string | null;
  usage: Usage | null;
  /** The answer's messages (assistant turns, tool calls and their results) to keep in the session. */
  reply: ChatMessage[];
  error?: UpstreamError;
  /** The client went away: nothing is known of the provider, and nothing is kept. */
  aborted?: boolean;
}

/**
 * Ends a call: the session, the provider's health and the events are written in one transaction,
 * so a session is never kept without its completion:finished (and the reverse).
 */
export async function finishChat(app: App, plan: ChatPlan, outcome: ChatOutcome): Promise<void> {
  // Gathered only when a session is kept: the answer and the caller's turns lose every secret.
  const secrets = outcome.aborted || outcome.error ? [] : await configuredSecrets(app);
  await app.events.write(async () => {
    if (outcome.aborted) {
      // nothing learned of the provider; the unanswered turn is not kept
    } else if (outcome.error) {
      const e = outcome.error;
      await recordUpstream(app, plan.provider.id, { ok: false, status: e.status, code: e.code, reason: reasonOf(e), request: requestKey(plan), retryAfterMs: e.retryAfterMs });
    } else {
      await recordUpstream(app, plan.provider.id, { ok: true });
      const messages = [...plan.messages, ...outcome.reply];
      await saveSession(app.db, { id: plan.sessionId, agent: plan.agent, model: plan.modelId, messages }, secrets, nowIso(app.clock));
      if (plan.responseId) await saveResponse(app.db, { id: plan.responseId, sessionId: plan.sessionId, agent: plan.agent, model: plan.modelId, messages }, secrets, nowIso(app.clock));
      if (plan.newSession) app.events.emit('session:started', { sessionId: plan.sessionId, agent: plan.agent, model: plan.modelId });
    }
    app.events.emit('completion:finished', {
      sessionId: plan.sessionId,
      agent: plan.agent,
      model: plan.modelId,
      finishReason: outcome.aborted ? 'aborted' : outcome.error ? 'error' : (outcome.finishReason ?? 'stop'),
      usage: outcome.usage ?? null,
      durationMs: Math.round(monotonic() - plan.started),
    });
  });
}

/**
 * Ends a call the upstream failed and answers what the client is told. The upstream's text is
 * scrubbed of every configured secret first (a 401 echoes the key it was sent), so neither the
 * answer, the stream's last frame, the provider's recorded reason nor a log line can carry one.
 */
export async function failChat(app: App, plan: ChatPlan, err: UpstreamError, usage: Usage | null = null): Promise<AppError> {
  const clean = err.scrubbed(await configuredSecrets(app));
  await finishChat(app, plan, { finishReason: null, usage, reply: [], error: clean });
  return upstreamFailure(plan, clean);
}

/** An upstream failure as the client sees it: 502 carrying the upstream's status, and its Retry-After when it gave one. */
function upstreamFailure(plan: ChatPlan, e: UpstreamError): AppError {
  const status = e.status === 'network' ? 'no answer' : String(e.status);
  return new AppError('upstream_error', `${plan.provider.id} answered ${status}: ${e.message}`, {
    details: [{ path: 'upstream.status', message: status }],
    ...(e.retryAfterMs !== null ? { headers: { 'Retry-After': String(Math.max(1, Math.ceil(e.retryAfterMs / 1000))) } } : {}),
  });
}

/**
 * What identifies the client's request, whichever provider it is sent to: its conversation and
 * settings, not the upstream's model name. A retry sends the same; so does a request that fails
 * wherever it goes.
 */
function requestKey(plan: ChatPlan): string {
  return createHash('sha256')
    .update(JSON.stringify([plan.agent, plan.modelId, plan.system, plan.messages, plan.passthrough]))
    .digest('hex');
}

/** A whole answer (a completion, a Response), with the session id to continue. */
export function sendAnswer(res: ServerResponse, plan: ChatPlan, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(200, { ...plan.headers, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'x-session-id': plan.sessionId });
  res.end(text);
}

/** The head of a streamed answer: Server-Sent Events, with the session id to continue. */
export function openEventStream(res: ServerResponse, plan: ChatPlan): void {
  res.writeHead(200, { ...plan.headers, 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'x-session-id': plan.sessionId });
  res.flushHeaders();
}

function reasonOf(e: UpstreamError): string {
  const what = e.status === 'network' ? 'network error' : `HTTP ${e.status}`;
  return e.code ? `${what} (${e.code})` : what;
}

/** The body sent upstream: the passed-through fields, the upstream's model name, the system turn first. */
export function upstreamBody(plan: ChatPlan): Record<string, unknown> {
  return { ...plan.passthrough, model: plan.upstreamModel, messages: [...plan.system, ...plan.messages] };
}
