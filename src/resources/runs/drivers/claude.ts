import { join } from 'node:path';
import type { Driver, Invocation, ParserOptions, PermissionMode, RunLogItem, RunSpec, Usage } from '../types.js';
import { cliModel, systemText } from './agent-text.js';
import { arr, BoundedMap, boundInput, count, cutText, isoFromEpochSeconds, ITEM_NAME_MAX, JsonLinesParser, lineCount, num, obj, own, showPath, str, type JsonObject } from './bounds.js';

// Claude Code, headless: `claude -p --output-format=stream-json --verbose`, the prompt on stdin.
// docs/runs.md "Runtimes" maps each agent field to its flag; /work/shared/agent-clis.md has the
// facts this rests on, checked against Claude Code 2.1.197.

/** How long Claude Code waits for one svc MCP call (its default, 60 s, is short for a slow tool). */
export const CLAUDE_MCP_TIMEOUT_MS = 600_000;

/** svc's MCP tool that answers Claude Code's permission prompts (tools/permissions.ts). */
export const PERMISSION_PROMPT_TOOL = 'mcp__svc__permission_prompt';

/**
 * How long Claude Code may wait for one svc MCP call: a permission request waits up to
 * runner.permissionTimeoutSec for its decision, and the call must outlast it by a margin (the
 * timeout decides on the daemon's timer; the answer then crosses the connection). A call that
 * ran out would be refused by Claude Code as a failed permission prompt.
 */
export const mcpTimeoutMs = (permissionTimeoutSec: number): number => Math.max(CLAUDE_MCP_TIMEOUT_MS, (permissionTimeoutSec + 60) * 1000);

const PERMISSION: Record<PermissionMode, string> = {
  acceptEdits: 'acceptEdits',
  bypass: 'bypassPermissions',
  // With --permission-prompt-tool: what the rules would ask a person is asked of svc, which asks one.
  ask: 'default',
};

/** The MCP configuration: svc's /mcp, the run key read from the process's own SVC_API_KEY (never written to disk). */
export const claudeMcpConfig = (url: string, timeoutMs = CLAUDE_MCP_TIMEOUT_MS): string =>
  JSON.stringify({ mcpServers: { svc: { type: 'http', url, headers: { Authorization: 'Bearer ${SVC_API_KEY}' }, timeout: timeoutMs } } }, null, 2);

function build(spec: RunSpec): Invocation {
  const { agent } = spec;
  const mcpFile = join(spec.runDir, 'claude-mcp.json');
  const promptFile = join(spec.runDir, 'claude-system-prompt.md');
  const model = cliModel(agent.model);
  const env: Record<string, string> = { SVC_API_KEY: spec.mcp.key };
  const args = ['-p', '--output-format=stream-json'];
  if (model) args.push(`--model=${model}`);
  if (agent.maxTurns) args.push(`--max-turns=${agent.maxTurns}`);
  // Every value in the `--flag=value` form: a value that starts with "-" stays a value.
  args.push(`--append-system-prompt-file=${promptFile}`);
  // In -p mode MCP tools that are not allowed are refused: svc's own are always allowed.
  for (const tool of [...agent.allowedTools, 'mcp__svc']) args.push(`--allowedTools=${tool}`);
  for (const dir of agent.allowedPaths) args.push(`--add-dir=${dir}`);
  args.push(`--permission-mode=${PERMISSION[spec.runtime.permissionMode]}`);
  if (spec.runtime.permissionMode === 'ask') args.push(`--permission-prompt-tool=${PERMISSION_PROMPT_TOOL}`);
  args.push(`--mcp-config=${mcpFile}`, '--strict-mcp-config');
  // A folder holding a SKILL.md loads as a plugin of that one skill (named `<name>:<name>`);
  // unlike --add-dir, that makes no working directory of it.
  for (const skill of agent.skills) args.push(`--plugin-dir=${skill.dir}`);
  if (agent.reasoning === 'off') env.MAX_THINKING_TOKENS = '0';
  else if (agent.reasoning) args.push(`--effort=${agent.reasoning}`);
  if (spec.resumeSessionId) args.push(`--resume=${spec.resumeSessionId}`);
  // Last of svc's flags and a boolean one, so no list-valued flag (--add-dir…) takes runtime.args.
  args.push('--verbose', ...spec.runtime.args);
  return {
    command: spec.runtime.command,
    args,
    env,
    stdin: spec.prompt,
    files: [
      { path: mcpFile, content: claudeMcpConfig(spec.mcp.url, spec.runtime.permissionMode === 'ask' ? mcpTimeoutMs(spec.runtime.permissionTimeoutSec) : CLAUDE_MCP_TIMEOUT_MS) },
      { path: promptFile, content: systemText(agent) },
    ],
  };
}

/** What a pending tool call is remembered by until its result comes. */
interface Call {
  tool: string;
  input: unknown;
}

const FILE_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);

/** The text of a tool_result's content: a string, or text blocks (an image is named, not kept). */
function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  const parts: string[] = [];
  for (const b of Array.isArray(content) ? content : []) {
    const type = str(b, 'type');
    if (type === 'text') parts.push(str(b, 'text') ?? '');
    else if (type) parts.push(`[${type}]`);
  }
  return parts.join('\n');
}

const usageFrom = (u: JsonObject | null): Usage => ({
  inputTokens: count(u, 'input_tokens'),
  outputTokens: count(u, 'output_tokens'),
  cacheReadTokens: count(u, 'cache_read_input_tokens'),
  cacheWriteTokens: count(u, 'cache_creation_input_tokens'),
  costUsd: null,
});

const addUsage = (a: Usage, b: Usage, sign: 1 | -1): Usage => ({
  inputTokens: a.inputTokens + sign * b.inputTokens,
  outputTokens: a.outputTokens + sign * b.outputTokens,
  cacheReadTokens: a.cacheReadTokens + sign * b.cacheReadTokens,
  cacheWriteTokens: a.cacheWriteTokens + sign * b.cacheWriteTokens,
  costUsd: a.costUsd,
});

/** A structuredPatch's added and removed lines (`+`/`-` lines of its hunks). */
function patchCounts(patch: unknown[]): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const hunk of patch) {
    for (const line of arr(hunk, 'lines')) {
      if (typeof line !== 'string') continue;
      if (line.startsWith('+')) added++;
      else if (line.startsWith('-')) removed++;
    }
  }
  return { added, removed };
}

/**
 * Reads Claude Code's stream-json. Usage: the result line's totals (with cost) once it comes;
 * before it, a running estimate from the assistant messages, each message counted once by its id
 * (Claude Code repeats a message's usage on every content block it prints, and that usage is the
 * message's start: its output tokens are undercounted until the result).
 */
class ClaudeParser extends JsonLinesParser {
  private calls = new BoundedMap<string, Call>();
  private messageUsage = new BoundedMap<string, Usage>();
  private mainMessages = new BoundedMap<string, true>();
  private cwd: string | undefined;
  private lastReset: string | null = null;
  private ended = false;

  constructor(opts: ParserOptions = {}) {
    super();
    this.cwd = opts.cwd;
  }

  protected read(o: JsonObject): RunLogItem[] | null {
    const session = str(o, 'session_id');
    if (session) this.st.sessionId = cutText(session, ITEM_NAME_MAX);
    switch (str(o, 'type')) {
      case 'system':
        return this.system(o);
      case 'assistant':
        return this.assistant(o);
      case 'user':
        return this.user(o);
      case 'result':
        return this.result(o);
      case 'rate_limit_event':
        return this.rateLimit(o);
      default:
        return null;
    }
  }

  private system(o: JsonObject): RunLogItem[] {
    const subtype = str(o, 'subtype') ?? 'unknown';
    if (subtype === 'init') {
      this.cwd ??= str(o, 'cwd') ?? undefined;
      const servers = arr(o, 'mcp_servers')
        .map((s) => `${str(s, 'name') ?? '?'} ${str(s, 'status') ?? '?'}`)
        .join(', ');
      const facts = [
        `Claude Code ${str(o, 'claude_code_version') ?? ''}`.trim(),
        `session ${this.st.sessionId ?? '?'}`,
        `model ${str(o, 'model') ?? '?'}`,
        `permission mode ${str(o, 'permissionMode') ?? '?'}`,
        `${arr(o, 'tools').length} tools`,
        `MCP: ${servers || 'none'}`,
      ];
      return [{ kind: 'system', text: cutText(facts.join(' · ')) }];
    }
    if (subtype === 'api_retry') {
      const status = num(o, 'error_status');
      const delay = num(o, 'retry_delay_ms');
      return [
        {
          kind: 'system',
          text: cutText(
            `API error${status ? ` ${status}` : ''} (${str(o, 'error') ?? 'unknown'}): retry ${num(o, 'attempt') ?? '?'} of ${num(o, 'max_retries') ?? '?'} in ${delay === null ? '?' : Math.round(delay)} ms`,
          ),
        },
      ];
    }
    // Estimates of thinking tokens come with every thinking block: nothing a person reads.
    if (subtype === 'thinking_tokens') return [];
    if (subtype === 'compact_boundary') return [{ kind: 'system', text: 'context compacted' }];
    return [{ kind: 'system', text: cutText(`system: ${subtype}`, ITEM_NAME_MAX) }];
  }

  private assistant(o: JsonObject): RunLogItem[] {
    this.st.idle = false;
    const message = obj(o, 'message');
    const id = str(message, 'id');
    if (id && !this.ended) {
      const usage = usageFrom(obj(message, 'usage'));
      const before = this.messageUsage.get(id);
      this.messageUsage.set(id, usage);
      this.st.usage = addUsage(before ? addUsage(this.st.usage, before, -1) : this.st.usage, usage, 1);
      if (own(o, 'parent_tool_use_id') == null && !this.mainMessages.has(id)) {
        this.mainMessages.set(id, true);
        this.st.turns++;
      }
    }
    const items: RunLogItem[] = [];
    const apiError = str(o, 'error');
    for (const block of arr(message, 'content')) {
      switch (str(block, 'type')) {
        case 'text': {
          const t = str(block, 'text') ?? '';
          // A failed API call comes as a synthetic message whose text is the error.
          items.push(apiError ? { kind: 'error', message: cutText(`${t} (${apiError})`) } : { kind: 'text', text: cutText(t) });
          break;
        }
        case 'thinking':
          items.push({ kind: 'thinking', text: cutText(str(block, 'thinking') ?? '') });
          break;
        case 'redacted_thinking':
          items.push({ kind: 'thinking', text: '[redacted thinking]' });
          break;
        case 'tool_use': {
          const callId = str(block, 'id');
          const tool = cutText(str(block, 'name') ?? '?', ITEM_NAME_MAX);
          const input = own(block, 'input');
          if (callId) this.calls.set(callId, { tool, input });
          items.push({ kind: 'tool_call', id: callId && cutText(callId, ITEM_NAME_MAX), tool, input: boundInput(input) });
          break;
        }
        default:
          items.push({ kind: 'raw', text: cutText(JSON.stringify(block) ?? '') });
      }
    }
    return items;
  }

  private user(o: JsonObject): RunLogItem[] {
    const blocks = arr(obj(o, 'message'), 'content').filter((b) => str(b, 'type') === 'tool_result');
    // The CLI's own view of the one result this line carries (a patch, a file's new content).
    const detail = blocks.length === 1 ? own(o, 'tool_use_result') : undefined;
    const items: RunLogItem[] = [];
    for (const block of blocks) {
      const id = str(block, 'tool_use_id');
      const call = id ? this.calls.get(id) : undefined;
      if (id) this.calls.delete(id);
      const isError = own(block, 'is_error') === true;
      const output = resultText(own(block, 'content'));
      const shownId = id && cutText(id, ITEM_NAME_MAX);
      if (call?.tool === 'Bash') {
        const exit = isError ? /^Exit code (\d+)/.exec(output) : null;
        const interrupted = own(detail, 'interrupted') === true;
        items.push({
          kind: 'command',
          id: shownId,
          command: cutText(str(call.input, 'command') ?? ''),
          exitCode: exit ? Number(exit[1]) : isError || interrupted ? null : 0,
          output: cutText(output),
          durationMs: null,
        });
        continue;
      }
      items.push({ kind: 'tool_result', id: shownId, tool: call?.tool ?? null, output: cutText(output), isError });
      if (call && FILE_TOOLS.has(call.tool) && !isError) items.push(this.fileChange(call, detail));
    }
    // Every call answered: Claude Code sends the results to the model next.
    if (blocks.length && this.calls.size === 0) this.st.idle = true;
    return items;
  }

  private fileChange(call: Call, detail: unknown): RunLogItem {
    const path = str(detail, 'filePath') ?? str(call.input, 'file_path') ?? str(call.input, 'notebook_path') ?? '?';
    const patch = arr(detail, 'structuredPatch');
    const created = str(detail, 'type') === 'create';
    let counts: { added: number | null; removed: number | null } = { added: null, removed: null };
    if (patch.length > 0) counts = patchCounts(patch);
    else if (created) counts = { added: lineCount(str(detail, 'content') ?? ''), removed: 0 };
    return { kind: 'file_change', path: showPath(path, this.cwd), change: created ? 'add' : 'update', ...counts };
  }

  private result(o: JsonObject): RunLogItem[] {
    this.ended = true;
    const u = obj(o, 'usage');
    const cost = num(o, 'total_cost_usd');
    if (u) this.st.usage = { ...usageFrom(u), costUsd: cost };
    else if (cost !== null) this.st.usage = { ...this.st.usage, costUsd: cost };
    const turns = num(o, 'num_turns');
    if (turns !== null) this.st.turns = Math.max(0, Math.floor(turns));
    const subtype = str(o, 'subtype') ?? 'unknown';
    const text = str(o, 'result');
    // A failed API call ends as subtype "success" with is_error true: both must say it went well.
    const ok = subtype === 'success' && own(o, 'is_error') !== true;
    this.st.succeeded = ok;
    this.st.summary = ok && text !== null ? cutText(text) : null;
    const items: RunLogItem[] = [{ kind: 'usage', usage: { ...this.st.usage } }];
    if (!ok) {
      const errors = arr(o, 'errors').filter((e): e is string => typeof e === 'string');
      this.st.error = cutText(text || errors.join('; ') || subtype);
      items.push({ kind: 'error', message: this.st.error });
    }
    const status = num(o, 'api_error_status');
    if (status === 429) this.st.usageLimit = { resetsAt: this.lastReset, status };
    const denied = arr(o, 'permission_denials').map((d) => str(d, 'tool_name') ?? '?');
    if (denied.length) items.push({ kind: 'system', text: cutText(`Claude Code refused ${denied.length} tool call(s) not allowed: ${[...new Set(denied)].join(', ')}`) });
    return items;
  }

  private rateLimit(o: JsonObject): RunLogItem[] | null {
    const info = obj(o, 'rate_limit_info');
    const status = str(info, 'status');
    if (status !== 'allowed' && status !== 'allowed_warning' && status !== 'rejected') return null;
    const resetsAt = isoFromEpochSeconds(num(info, 'resetsAt'));
    const limitType = str(info, 'rateLimitType');
    if (status === 'rejected') {
      this.lastReset = resetsAt;
      this.st.usageLimit = { resetsAt, status: null };
    }
    return [{ kind: 'rate_limit', status, resetsAt, limitType: limitType && cutText(limitType, ITEM_NAME_MAX) }];
  }
}

export const claudeDriver: Driver = {
  kind: 'claude',
  defaultCommand: 'claude',
  versionArgs: ['--version'],
  resumedUsage: 'per-run',
  // `--resume` of a session Claude Code does not have: a result with this error, exit 1.
  sessionMissing: /No conversation found/i,
  build,
  parser: (opts) => new ClaudeParser(opts),
};
