import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { systemClock } from '../../../lib/clock.js';
import type { Driver, Invocation, ParserOptions, PermissionMode, RunLogItem, RunSpec, Usage } from '../types.js';
import { cliModel, systemText } from './agent-text.js';
import { arr, boundInput, count, cutText, ITEM_NAME_MAX, JsonLinesParser, num, obj, own, showPath, str, wellFormed, type JsonObject } from './bounds.js';

// Codex, headless: `codex exec --json … -` (or `codex exec --json … resume <id> -`), the prompt on
// stdin, which must be closed (exec waits for more input while it is open). docs/runs.md
// "Runtimes" maps each agent field to its option; checked against Codex 0.171.0.

/** How long Codex waits for one svc MCP call, in seconds (its default, 60 s, is short for a slow tool). */
export const CODEX_MCP_TIMEOUT_SEC = 600;

/**
 * The longest developer instructions passed as a `-c` value: Linux refuses one argument over
 * 128 KiB (MAX_ARG_STRLEN). Longer instructions open the prompt on stdin instead.
 */
export const CODEX_ARG_MAX = 100 * 1024;

const SANDBOX: Record<PermissionMode, string> = {
  acceptEdits: 'workspace-write',
  // No sandbox; `codex exec` never asks for approval, so this is all of "bypass".
  bypass: 'danger-full-access',
  // `codex exec` cannot ask (only its app-server sends approval requests): "ask" is the sandbox,
  // with the network shut and approvals off whatever the user's config.toml says (ASK_CONFIG).
  ask: 'workspace-write',
};

/**
 * What "ask" adds for Codex: nothing is asked (a command the sandbox stops fails, and the model
 * reads why), and no user configuration can open the sandbox's network. docs/runs.md.
 */
export const ASK_CONFIG = ['--config=sandbox_workspace_write.network_access=false', '--config=approval_policy="never"'];

const EFFORT: Record<'off' | 'low' | 'medium' | 'high', string> = { off: 'none', low: 'low', medium: 'medium', high: 'high' };

/**
 * A TOML basic string: JSON's escapes are TOML's, except that TOML also wants DEL escaped and
 * has no lone surrogates (JSON.stringify writes them as \uD8xx escapes).
 */
export const tomlString = (s: string): string => JSON.stringify(wellFormed(s)).replace(/\u007f/g, '\\u007f');

/** Whether `dir` lies in a git repository (Codex refuses a directory that is not one, unless told). */
function inGitRepo(dir: string): boolean {
  for (let d = resolve(dir); ; d = dirname(d)) {
    if (existsSync(join(d, '.git'))) return true;
    if (dirname(d) === d) return false;
  }
}

/** Codex has no way to load a skill folder by path: its developer instructions point at them. */
const skillsText = (skills: RunSpec['agent']['skills']): string[] =>
  skills.length ? [`Skills assigned to you (each a folder with a SKILL.md; read it before the work it covers):\n${skills.map((s) => `- ${s.name}: ${join(s.dir, 'SKILL.md')}`).join('\n')}`] : [];

function build(spec: RunSpec): Invocation {
  const { agent } = spec;
  const model = cliModel(agent.model);
  // Every value in the `--option=value` form: a value that starts with "-" stays a value.
  const args = ['exec', '--json'];
  if (model) args.push(`--model=${model}`);
  args.push(`--sandbox=${SANDBOX[spec.runtime.permissionMode]}`, `--cd=${spec.cwd}`);
  if (spec.runtime.permissionMode === 'ask') args.push(...ASK_CONFIG);
  if (!inGitRepo(spec.cwd)) args.push('--skip-git-repo-check');
  for (const dir of agent.allowedPaths) args.push(`--add-dir=${dir}`);
  if (agent.reasoning) args.push(`--config=model_reasoning_effort=${tomlString(EFFORT[agent.reasoning])}`);
  const instructions = tomlString(systemText(agent, skillsText(agent.skills)));
  let stdin = spec.prompt;
  if (Buffer.byteLength(instructions) <= CODEX_ARG_MAX) args.push(`--config=developer_instructions=${instructions}`);
  else stdin = `<developer_instructions>\n${systemText(agent, skillsText(agent.skills))}\n</developer_instructions>\n\n${spec.prompt}`;
  args.push(
    `--config=mcp_servers.svc.url=${tomlString(spec.mcp.url)}`,
    `--config=mcp_servers.svc.bearer_token_env_var="SVC_API_KEY"`,
    `--config=mcp_servers.svc.tool_timeout_sec=${CODEX_MCP_TIMEOUT_SEC}`,
    ...spec.runtime.args,
  );
  if (spec.resumeSessionId) args.push('resume', spec.resumeSessionId);
  args.push('-');
  return { command: spec.runtime.command, args, env: { SVC_API_KEY: spec.mcp.key }, stdin, files: [] };
}

const MONTHS = new Map(['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'].map((m, i) => [m, i]));

/**
 * The reset time in Codex's usage-limit message ("… or try again at 5:46 PM." today, "… at Mar
 * 17th, 2030 5:46 PM." another day), in this machine's time zone as Codex wrote it. Codex drops
 * the seconds: the time is the end of that minute, so a paused run never resumes early.
 */
export function codexResetTime(message: string, now: number): string | null {
  const m = /try again at (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th), (\d{4}) )?(\d{1,2}):(\d{2}) ([AP]M)/.exec(message);
  if (!m) return null;
  const today = new Date(now);
  const month = m[1] ? MONTHS.get(m[1]) : today.getMonth();
  if (month === undefined) return null;
  const hour = (Number(m[4]) % 12) + (m[6] === 'PM' ? 12 : 0);
  const at = new Date(m[3] ? Number(m[3]) : today.getFullYear(), month, m[2] ? Number(m[2]) : today.getDate(), hour, Number(m[5]) + 1);
  return Number.isNaN(at.getTime()) ? null : at.toISOString();
}

/** Codex's wording of a usage limit (its 429 usage_limit_reached and insufficient_quota answers). */
const USAGE_LIMIT = /hit your usage limit|usage limit (?:has been )?reached|quota exceeded/i;
/** A turn that failed on a 429 after Codex's own retries. */
const TOO_MANY = /\b429\b|too many requests/i;

/**
 * Token counts from turn.completed: Codex reports the thread's totals so far (a resumed thread's
 * include its earlier runs). Codex counts cached input inside input_tokens, Claude Code outside:
 * inputTokens here is the input neither read from nor written to the cache, as Claude Code's is.
 */
const usageFrom = (u: JsonObject | null): Usage => {
  const cacheRead = count(u, 'cached_input_tokens');
  const cacheWrite = count(u, 'cache_write_input_tokens');
  return {
    inputTokens: Math.max(0, count(u, 'input_tokens') - cacheRead - cacheWrite),
    outputTokens: count(u, 'output_tokens'),
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    costUsd: null,
  };
};

const CHANGE = new Map<string, 'add' | 'update' | 'delete'>([
  ['add', 'add'],
  ['update', 'update'],
  ['delete', 'delete'],
]);

/** An MCP result's text: its text content blocks (others named), or the error Codex recorded. */
function mcpOutput(item: JsonObject): string {
  const error = own(item, 'error');
  if (error != null) return str(error, 'message') ?? (typeof error === 'string' ? error : JSON.stringify(error));
  const parts = arr(obj(item, 'result'), 'content').map((c) => (str(c, 'type') === 'text' ? (str(c, 'text') ?? '') : `[${str(c, 'type') ?? '?'}]`));
  return parts.join('\n');
}

/** Reads `codex exec --json`. The run went well when its last turn completed; a turn.failed says why not. */
class CodexParser extends JsonLinesParser {
  private readonly cwd: string | undefined;
  private readonly now: () => number;

  constructor(opts: ParserOptions = {}) {
    super();
    this.cwd = opts.cwd;
    const clock = opts.clock ?? systemClock;
    this.now = () => clock.now();
  }

  protected read(o: JsonObject): RunLogItem[] | null {
    switch (str(o, 'type')) {
      case 'thread.started': {
        const id = str(o, 'thread_id');
        if (!id) return null;
        this.st.sessionId = cutText(id, ITEM_NAME_MAX);
        return [{ kind: 'system', text: `Codex thread ${this.st.sessionId}` }];
      }
      case 'turn.started':
        this.st.turns++;
        this.st.succeeded = null;
        this.st.idle = false;
        return [];
      case 'turn.completed':
        this.st.usage = usageFrom(obj(o, 'usage'));
        this.st.succeeded = true;
        this.st.error = null;
        this.st.idle = true;
        return [{ kind: 'usage', usage: { ...this.st.usage } }];
      case 'turn.failed': {
        const message = cutText(str(obj(o, 'error'), 'message') ?? 'turn failed');
        this.st.succeeded = false;
        this.st.error = message;
        return this.limited(message, true, { kind: 'error', message });
      }
      case 'error': {
        // Also transient notices ("Reconnecting... 1/5"): only turn.failed ends a run badly.
        const message = cutText(str(o, 'message') ?? 'error');
        return this.limited(message, false, { kind: 'error', message });
      }
      case 'item.started':
      case 'item.updated':
      case 'item.completed': {
        const item = obj(o, 'item');
        return item && this.item(str(o, 'type')!.slice(5), item);
      }
      default:
        return null;
    }
  }

  /** `item`, with a usage limit recorded (and a rate_limit item added) when the message is one. */
  private limited(message: string, failed: boolean, item: RunLogItem): RunLogItem[] {
    const usage = USAGE_LIMIT.test(message);
    if (!usage && !(failed && TOO_MANY.test(message))) return [item];
    const resetsAt = codexResetTime(message, this.now());
    const status = TOO_MANY.test(message) ? 429 : null;
    // The same limit comes twice (error, then turn.failed): one rate_limit item is enough.
    if (this.st.usageLimit && this.st.usageLimit.resetsAt === resetsAt) return [item];
    this.st.usageLimit = { resetsAt, status };
    return [item, { kind: 'rate_limit', status: 'rejected', resetsAt, limitType: null }];
  }

  /** One item event (`started`, `updated` or `completed`); null when its shape is not known. */
  private item(phase: string, item: JsonObject): RunLogItem[] | null {
    const id = str(item, 'id');
    const shownId = id && cutText(id, ITEM_NAME_MAX);
    const done = phase === 'completed';
    switch (str(item, 'type')) {
      case 'agent_message': {
        if (!done) return [];
        const t = cutText(str(item, 'text') ?? '');
        this.st.summary = t;
        return [{ kind: 'text', text: t }];
      }
      case 'reasoning':
        return done ? [{ kind: 'thinking', text: cutText(str(item, 'text') ?? '') }] : [];
      case 'command_execution':
        if (phase === 'updated') return [];
        return [
          {
            kind: 'command',
            id: shownId,
            command: cutText(str(item, 'command') ?? ''),
            exitCode: done ? num(item, 'exit_code') : null,
            output: done ? cutText(str(item, 'aggregated_output') ?? '') : null,
            durationMs: null,
          },
        ];
      case 'file_change': {
        if (!done) return [];
        const changes = arr(item, 'changes');
        const paths = changes.map((c) => str(c, 'path') ?? '?');
        if (str(item, 'status') === 'failed') return [{ kind: 'error', message: cutText(`patch not applied: ${paths.join(', ')}`) }];
        return changes.map((c, i) => ({ kind: 'file_change', path: showPath(paths[i]!, this.cwd), change: CHANGE.get(str(c, 'kind') ?? '') ?? 'update', added: null, removed: null }));
      }
      case 'mcp_tool_call': {
        const tool = cutText(`mcp__${str(item, 'server') ?? '?'}__${str(item, 'tool') ?? '?'}`, ITEM_NAME_MAX);
        if (phase === 'started') return [{ kind: 'tool_call', id: shownId, tool, input: boundInput(own(item, 'arguments')) }];
        if (!done) return [];
        const isError = str(item, 'status') === 'failed' || own(item, 'error') != null;
        return [{ kind: 'tool_result', id: shownId, tool, output: cutText(mcpOutput(item)), isError }];
      }
      case 'web_search':
        return done ? [{ kind: 'tool_call', id: shownId, tool: 'web_search', input: boundInput({ query: str(item, 'query') }) }] : [];
      case 'todo_list': {
        if (done) return [];
        const steps = arr(item, 'items').map((t) => `${own(t, 'completed') === true ? '[x]' : '[ ]'} ${str(t, 'text') ?? ''}`);
        return [{ kind: 'system', text: cutText(`plan:\n${steps.join('\n')}`) }];
      }
      case 'error':
        // Not fatal: Codex opens a stream with one when it lacks a model's metadata.
        return done ? [{ kind: 'error', message: cutText(str(item, 'message') ?? 'error') }] : [];
      default:
        return null;
    }
  }
}

export const codexDriver: Driver = {
  kind: 'codex',
  defaultCommand: 'codex',
  versionArgs: ['--version'],
  resumedUsage: 'session-total',
  // `exec resume <id>` of a thread Codex has no rollout of: on stderr, exit 1, nothing on stdout.
  sessionMissing: /no rollout found for thread|thread\/resume failed/i,
  build,
  parser: (opts) => new CodexParser(opts),
};
