import { serviceKey, type App } from '../../app.js';
import { lockKey } from '../../db/open.js';
import { nowIso } from '../../lib/time.js';
import { resolveProviders, type Provider } from './catalog.js';
import { RECENT_FAILURES } from './failures.js';
import { afterFailure, afterSuccess, afterUsageLimit, classifyFailure, statusOf, unavailableUntil, type FailureFacts, type ProviderHealth } from './health.js';
import type { ProviderStatusInfo } from './schema.js';
import * as store from './store.js';

export { splitModelId } from './catalog.js';
export type { Provider } from './catalog.js';

/** Providers as configured now (a project.json reload or a new env applies at the next call). */
export const providers = (app: App): Map<string, Provider> => resolveProviders(app.config(), app.env);

const usable = (p: Provider): boolean => p.keyless || p.key !== null;

/**
 * How many runs wait for each paused provider (queued or paused runs of agents on it), from the
 * runs resource; provided by the runs' wire(), so this resource does not reach into the runs' tables.
 */
export const WAITING_RUNS = serviceKey<(app: App, now: number) => Promise<Map<string, number>>>('providers.waitingRuns');

export async function authStatus(app: App, now = app.clock.now()): Promise<{ providers: Record<string, ProviderStatusInfo> }> {
  const health = await store.allHealth(app.db);
  const waiting = [...health.values()].some((h) => h.pausedUntil !== null && h.pausedUntil > now) ? await app.services.get(WAITING_RUNS)(app, now) : new Map<string, number>();
  const out: Record<string, ProviderStatusInfo> = {};
  for (const p of providers(app).values()) {
    const h = health.get(p.id);
    const entry: ProviderStatusInfo = {
      configKey: p.configKey,
      envVar: p.envVar,
      hasEnvKey: p.hasEnvKey,
      hasConfigKey: p.hasConfigKey,
      profiles: [],
      status: statusOf(h ?? afterSuccess(), usable(p), now),
      errorCount: h?.errorCount ?? 0,
      runsWaiting: waiting.get(p.id) ?? 0,
    };
    if (h?.cooldownUntil && h.cooldownUntil > now) entry.cooldownUntil = new Date(h.cooldownUntil).toISOString();
    if (h?.disabledUntil && h.disabledUntil > now) entry.disabledUntil = new Date(h.disabledUntil).toISOString();
    if (h?.pausedUntil && h.pausedUntil > now) entry.pausedUntil = new Date(h.pausedUntil).toISOString();
    if (h?.lastErrorReason) entry.lastErrorReason = h.lastErrorReason;
    out[p.id] = entry;
  }
  return { providers: out };
}

export const providerHealth = async (app: App, id: string): Promise<ProviderHealth> => await store.getHealth(app.db, id);

export const isUsable = usable;

/**
 * Every provider key configured now, for scrubbing upstream text (a 401 echoes the key it was
 * sent): the key in use, and the environment's one too when project.json's overrides it, and
 * every configured header's value (any header may carry a credential: `Cookie`, `X-Auth-Key`…),
 * whole and, after an auth scheme, the token alone (`Bearer sk-…` is echoed as `sk-…`; a Basic
 * credential decoded).
 */
export function providerKeys(app: App): string[] {
  const out: string[] = [];
  for (const p of providers(app).values()) {
    if (p.key) out.push(p.key);
    const fromEnv = Object.hasOwn(app.env, p.envVar) ? app.env[p.envVar] : undefined;
    if (fromEnv) out.push(fromEnv);
    for (const value of Object.values(p.headers)) out.push(value, ...credentialParts(value));
  }
  return out;
}

/** The token of `<scheme> <token>`, and for Basic the decoded user:password and each half. */
function credentialParts(value: string): string[] {
  const m = /^\s*([A-Za-z][\w-]*)\s+(\S+)\s*$/.exec(value);
  if (!m) return [];
  const out = [m[2]!];
  if (/^basic$/i.test(m[1]!)) {
    const decoded = Buffer.from(m[2]!, 'base64').toString('utf8');
    out.push(decoded, ...decoded.split(':'));
  }
  return out;
}

/** When the provider may be called again, or null when it may be called now. */
export const blockedUntil = async (app: App, id: string, now = app.clock.now()): Promise<number | null> => unavailableUntil(await store.getHealth(app.db, id), now);

export type UpstreamOutcome =
  | { ok: true }
  | {
      ok: false;
      status: number | 'network';
      code?: string | null;
      reason: string;
      /** What identifies the client's request (its conversation and settings), to tell its retries and its failures elsewhere. */
      request?: string;
      /** The upstream's own Retry-After. */
      retryAfterMs?: number | null;
    };

/** Feeds an upstream answer into the provider's schedules. */
export async function recordUpstream(app: App, id: string, outcome: UpstreamOutcome, now = app.clock.now()): Promise<void> {
  // A transient failure of a request that already failed (here: a retry; elsewhere: the request's
  // own doing) is not one more of the provider's. Asked before the transaction: memory, not state.
  const failedBefore =
    !outcome.ok && outcome.request !== undefined && classifyFailure(outcome.status, outcome.code) === 'transient' ? app.services.get(RECENT_FAILURES).record(outcome.request, id, now) : null;
  // Read and write in one transaction: daemons sharing a state must not lose each other's counts.
  await app.db.transaction(async () => {
    await lockKey(app.db, 'provider', id);
    await record(app, id, outcome, now, { counted: !failedBefore?.size });
  });
}

async function record(app: App, id: string, outcome: UpstreamOutcome, now: number, facts: FailureFacts): Promise<void> {
  const before = await store.getHealth(app.db, id);
  if (outcome.ok) {
    await recordSuccess(app, id, before, now);
    return;
  }
  const next = afterFailure(before, classifyFailure(outcome.status, outcome.code), outcome.reason, now, { ...facts, retryAfterMs: outcome.retryAfterMs });
  if (next !== before) await store.putHealth(app.db, id, next, nowIso(app.clock));
}

async function recordSuccess(app: App, id: string, before: ProviderHealth, now: number): Promise<void> {
  if (before.errorCount || before.billingCount || before.authFailed || before.cooldownUntil || before.disabledUntil) await store.putHealth(app.db, id, afterSuccess(before, now), nowIso(app.clock));
}

/**
 * A run of an agent on provider `id` ran into a usage limit (inside the caller's transaction):
 * the provider cools down, and its runs pause, until the reset (or its backoff). Returns until when.
 */
export async function pauseProvider(app: App, id: string, reason: string, resetsAt: number | null, now = app.clock.now()): Promise<number> {
  const next = afterUsageLimit(await store.getHealth(app.db, id), reason, now, resetsAt);
  await store.putHealth(app.db, id, next, nowIso(app.clock));
  return next.pausedUntil!;
}

/** A run on the provider ended well: its failure counts are cleared unless a pause is on. */
export async function providerServed(app: App, id: string, now = app.clock.now()): Promise<void> {
  await recordSuccess(app, id, await store.getHealth(app.db, id), now);
}

/** Providers whose runs are paused, or whose pause is over but not yet said to be: id → paused until. */
export async function pausedProviders(app: App): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const [id, h] of await store.allHealth(app.db)) if (h.pausedUntil !== null) out.set(id, h.pausedUntil);
  return out;
}

/** Says a pause is over (false when another daemon did, or the pause moved later meanwhile). */
export const endPause = async (app: App, id: string, until: number): Promise<boolean> => await store.endPause(app.db, id, until, nowIso(app.clock));

/** A person resumed a run before its provider's reset: the pause and the cooldown end now. */
export const liftPause = async (app: App, id: string): Promise<boolean> => await store.liftPause(app.db, id, nowIso(app.clock));
