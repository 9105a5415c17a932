import { createHash } from 'node:crypto';
import type { App } from '../../app.js';
import { errorFields } from '../../kernel/log.js';
import { uuidv7 } from '../../lib/ids.js';
import { redactValue } from '../../lib/redact.js';
import { nowIso } from '../../lib/time.js';
import { canonicalJson } from '../data/idempotency.js';
import type { Approval, TimeoutAction } from './schema.js';
import { decidePending } from './service.js';
import * as store from './store.js';

// Permission requests: a tool use an agent's CLI asks about during a run (permissionMode "ask")
// becomes an approval of kind "permission". Unlike a task gate it moves nothing: the run holds its
// task in_progress and waits for the decision, which goes back to the CLI as allow or deny. The
// MCP tool that the CLI calls is tools/permissions.ts; this is the record and the wait.

/** What a CLI asks: a tool and its input, in a run of an agent on a task. */
export interface PermissionAsk {
  runId: string;
  taskId: string;
  missionId: string | null;
  agent: string;
  tool: string;
  input: unknown;
  toolUseId: string | null;
}

export interface PermissionSettings {
  /** runner.permissionTimeoutSec / permissionTimeoutAction. */
  timeoutSec: number;
  timeoutAction: TimeoutAction;
  /** Scrubbed from the input before it is kept or shown. */
  secrets: readonly string[];
}

/** A large input is kept as its JSON text, cut to this many characters. */
export const PERMISSION_INPUT_MAX = 16 * 1024;
const TITLE_DETAIL_MAX = 300;

/** The input's field that says what the call does, per Claude Code's tools (Bash: command; Edit: file_path…). */
const DETAIL_FIELDS = ['command', 'file_path', 'notebook_path', 'path', 'url', 'pattern', 'query', 'prompt'];

/** `text` cut to `max` characters (never inside a surrogate pair), on one line. */
function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const end = /[\uD800-\uDBFF]/.test(flat[max - 2] ?? '') ? max - 2 : max - 1;
  return `${flat.slice(0, end)}…`;
}

/** A non-blank string field of the input's own, or null. */
function field(input: unknown, name: string): string | null {
  if (typeof input !== 'object' || input === null || Array.isArray(input) || !Object.hasOwn(input, name)) return null;
  const v = (input as Record<string, unknown>)[name];
  return typeof v === 'string' && v.trim() ? v : null;
}

/** "cody wants to run Bash: npm test"; "cody wants to use Edit: src/cli.ts". */
export function permissionTitle(agent: string, tool: string, input: unknown): string {
  const verb = tool === 'Bash' ? 'run' : 'use';
  const detail = DETAIL_FIELDS.map((f) => field(input, f)).find((v) => v !== null) ?? null;
  return `${agent} wants to ${verb} ${oneLine(tool, 100)}${detail ? `: ${oneLine(detail, TITLE_DETAIL_MAX)}` : ''}`;
}

/** The input as kept: secrets redacted (run keys too, whoever's), and a large one cut to its JSON text. */
export function keptInput(input: unknown, secrets: readonly string[]): unknown {
  const json = JSON.stringify(input ?? null);
  // A run key anywhere in the input (`echo $SVC_API_KEY`): only digests of them are held, so they are known by their form.
  const runKeys = json.match(/svc_run_[A-Za-z0-9_-]{20,}/g) ?? [];
  const clean = redactValue(input ?? null, [...secrets, ...runKeys]);
  const text = JSON.stringify(clean);
  return text.length <= PERMISSION_INPUT_MAX ? clean : `${text.slice(0, PERMISSION_INPUT_MAX)}… [${text.length - PERMISSION_INPUT_MAX} more characters cut]`;
}

/** The digest an ask is found again by: the same agent, tool and (kept) input. */
export const askKey = (agent: string, tool: string, input: unknown): string =>
  createHash('sha256')
    .update(canonicalJson([agent, tool, input]))
    .digest('hex');

/**
 * The approval that answers this ask: the one already asked for the same agent, tool and input in
 * this task while no CLI has heard its decision (the CLI was stopped while it waited and resumed
 * since, and asks again), else a new pending request with its approval:requested event. The task
 * is not moved. A request found again follows the run that now waits on it (runId).
 */
export async function askPermission(app: App, ask: PermissionAsk, s: PermissionSettings): Promise<Approval> {
  const input = keptInput(ask.input, s.secrets);
  const key = askKey(ask.agent, ask.tool, input);
  return await app.events.write(async () => {
    const found = await store.openAsk(app.db, ask.taskId, key);
    if (found) {
      if (found.status === 'pending' && found.runId !== ask.runId) await store.moveAsk(app.db, found.id, ask.runId, nowIso(app.clock));
      return (await store.getApproval(app.db, found.id))!;
    }
    const id = uuidv7(app.clock.now());
    const now = nowIso(app.clock);
    // From the kept input: redacted already (run keys too), and a large one gives no detail.
    const title = redactValue(permissionTitle(ask.agent, ask.tool, input), s.secrets);
    const description = field(input, 'description');
    await store.insertApproval(app.db, {
      id,
      kind: 'permission',
      taskId: ask.taskId,
      missionId: ask.missionId,
      requestedBy: ask.agent,
      title,
      reason: description === null ? null : oneLine(description, 1000),
      payload: JSON.stringify({ tool: ask.tool, input, toolUseId: ask.toolUseId }),
      timeoutAction: s.timeoutAction,
      expiresAt: new Date(Date.parse(now) + s.timeoutSec * 1000).toISOString(),
      taskFrom: null,
      runId: ask.runId,
      agent: ask.agent,
      tool: ask.tool,
      askKey: key,
      now,
    });
    app.events.emit('approval:requested', {
      approvalId: id,
      kind: 'permission',
      taskId: ask.taskId,
      missionId: ask.missionId,
      title,
      requestedBy: ask.agent,
      runId: ask.runId,
      tool: ask.tool,
    });
    return (await store.getApproval(app.db, id))!;
  });
}

/**
 * Resolves with the approval once it is decided (at once if it is already), by whichever daemon:
 * approval:resolved is heard after its commit, on a shared state the other daemons' too. Rejects
 * with the signal's reason when the signal aborts first (the CLI hung up): the request stays.
 */
export function decisionOf(app: App, id: string, signal?: AbortSignal): Promise<Approval> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let unsubscribe = (): void => {};
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      unsubscribe();
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const onAbort = (): void => settle(() => reject(signal!.reason ?? new Error('aborted')));
    const check = (): Promise<void> =>
      store.getApproval(app.db, id).then(
        (a) => {
          if (a && a.status !== 'pending') settle(() => resolve(a));
        },
        (err: unknown) => settle(() => reject(err as Error)),
      );
    if (signal?.aborted) return onAbort();
    unsubscribe = app.events.subscribe((e) => {
      if (e.name === 'approval:resolved' && e.data.approvalId === id) void check();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    void check();
  });
}

/** A CLI was told the decision: the same ask later is a new request. */
export async function markAnswered(app: App, id: string): Promise<void> {
  await app.events.write(async () => await store.markAnswered(app.db, id, nowIso(app.clock)));
}

/** What Claude Code's --permission-prompt-tool expects back (its text is this object's JSON). */
export type PermissionAnswer = { behavior: 'allow'; updatedInput: Record<string, unknown> } | { behavior: 'deny'; message: string };

/** The answer a decided request gives the CLI: allow with the input as the CLI sent it, or deny saying why. */
export function permissionAnswer(a: Approval, input: Record<string, unknown>): PermissionAnswer {
  if (a.status === 'approved') return { behavior: 'allow', updatedInput: input };
  if (a.timedOut)
    return {
      behavior: 'deny',
      message: `Nobody decided whether you may use ${a.tool ?? 'this tool'} in time, so it is refused (svc's runner.permissionTimeoutAction). Do without it, or explain in your summary why it is needed.`,
    };
  return { behavior: 'deny', message: `${a.resolvedBy ? `${a.resolvedBy} refused` : 'Refused'}: ${a.feedback ?? 'no reason given'}` };
}

/**
 * A run that ended (not lost: a lost run is queued again and its CLI, resumed, asks again)
 * leaves nothing waiting: the pending permission requests of its task are rejected, saying
 * why, and marked answered (the next run asks anew). Returns how many.
 */
export async function refuseTaskPermissions(app: App, taskId: string, runStatus: string): Promise<number> {
  let n = 0;
  for (const id of await store.pendingPermissionsOfTask(app.db, taskId)) {
    await app.events.write(async () => {
      const a = await decidePending(app, id, { status: 'rejected', feedback: `the run ended (${runStatus}) before anyone decided`, resolvedBy: `run ${runStatus}`, timedOut: false });
      if (a) {
        await store.markAnswered(app.db, id, nowIso(app.clock));
        n++;
      }
    });
  }
  return n;
}

/**
 * Listens for runs that end, for the daemon's lifetime (a part of the approvals' server.ts), so that no permission request
 * of a cancelled, failed or finished run waits for a decision nobody needs. On a shared state
 * every daemon hears the end; the decision's compare-and-set lets one of them make it.
 */
export function startPermissionSweeper(app: App): { close(): void } {
  const unsubscribe = app.events.subscribe((e) => {
    if (e.name !== 'run:finished' || e.data.status === 'lost' || typeof e.data.taskId !== 'string') return;
    const taskId = e.data.taskId;
    const status = String(e.data.status);
    // After the event's own transaction, never inside its publication.
    setImmediate(() => {
      refuseTaskPermissions(app, taskId, status).then(
        (n) => n && app.log.info('permission requests of an ended run refused', { taskId, runStatus: status, approvals: n }),
        (err: unknown) => app.log.error('refusing the permission requests of an ended run failed; their timeouts will decide them', { taskId, ...errorFields(err) }),
      );
    });
  });
  return { close: unsubscribe };
}
