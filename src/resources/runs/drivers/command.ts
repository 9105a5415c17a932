import type { Driver, Invocation, RunLogItem, RunSpec, Usage } from '../types.js';
import { boundInput, count, cutText, isoFromEpochSeconds, ITEM_NAME_MAX, JsonLinesParser, num, obj, own, str, type JsonObject } from './bounds.js';

// Any program as an agent: `runtime.command` with `runtime.args`, the prompt on stdin. Each
// stdout line that is a JSON object of one of the shapes below becomes a log item (or the run's
// state); any other line is kept as a `raw` item. docs/runs.md "Runtimes" lists the shapes. This
// is what the runner's own tests and benchmark drive: it is kept to plain field checks.
//
//   {"type":"text","text":"…"}                    {"type":"thinking","text":"…"}
//   {"type":"tool_call","tool":"…","id"?,"input"?} {"type":"tool_result","output":"…","id"?,"tool"?,"isError"?}
//   {"type":"command","command":"…","exitCode"?,"output"?,"durationMs"?,"id"?}
//   {"type":"file_change","path":"…","change":"add"|"update"|"delete","added"?,"removed"?}
//   {"type":"error","message":"…"}                {"type":"system","text":"…"}
//   {"type":"usage","usage":{inputTokens?,outputTokens?,cacheReadTokens?,cacheWriteTokens?,costUsd?}}   (running totals)
//   {"type":"rate_limit","status":"allowed"|"allowed_warning"|"rejected","resetsAt"?,"limitType"?}
//   {"type":"result","summary"?,"sessionId"?,"usage"?,"turns"?,"error"?}   (error present: the run failed)

function build(spec: RunSpec): Invocation {
  const env: Record<string, string> = { SVC_MCP_URL: spec.mcp.url };
  if (spec.resumeSessionId) env.SVC_RESUME_SESSION = spec.resumeSessionId;
  return { command: spec.runtime.command, args: [...spec.runtime.args], env, stdin: spec.prompt, files: [] };
}

const text = (o: JsonObject, key: string): string | null => {
  const v = str(o, key);
  return v === null ? null : cutText(v);
};
const name = (o: JsonObject, key: string): string | null => {
  const v = str(o, key);
  return v === null ? null : cutText(v, ITEM_NAME_MAX);
};
/** A whole number or null; undefined when the field holds something else (the line is not ours). */
const intOrNull = (o: JsonObject, key: string): number | null | undefined => {
  const v = own(o, key);
  if (v === undefined || v === null) return null;
  return typeof v === 'number' && Number.isInteger(v) ? v : undefined;
};

const usageFrom = (u: JsonObject): Usage => {
  const cost = num(u, 'costUsd');
  return {
    inputTokens: count(u, 'inputTokens'),
    outputTokens: count(u, 'outputTokens'),
    cacheReadTokens: count(u, 'cacheReadTokens'),
    cacheWriteTokens: count(u, 'cacheWriteTokens'),
    costUsd: cost !== null && cost >= 0 ? cost : null,
  };
};

/** A reset time as ISO: an ISO string, or epoch seconds. */
function resetOf(o: JsonObject): string | null {
  const s = str(o, 'resetsAt');
  if (s !== null) {
    const t = Date.parse(s);
    return Number.isNaN(t) ? null : new Date(t).toISOString();
  }
  return isoFromEpochSeconds(num(o, 'resetsAt'));
}

class CommandParser extends JsonLinesParser {
  protected read(o: JsonObject): RunLogItem[] | null {
    // A usage line ends a turn: the program may be stopped there (until its next line).
    this.st.idle = str(o, 'type') === 'usage';
    switch (str(o, 'type')) {
      case 'text':
      case 'thinking': {
        const t = text(o, 'text');
        return t === null ? null : [{ kind: str(o, 'type') as 'text' | 'thinking', text: t }];
      }
      case 'system': {
        const t = text(o, 'text');
        return t === null ? null : [{ kind: 'system', text: t }];
      }
      case 'error': {
        const m = text(o, 'message');
        return m === null ? null : [{ kind: 'error', message: m }];
      }
      case 'tool_call': {
        const tool = name(o, 'tool');
        return tool === null ? null : [{ kind: 'tool_call', id: name(o, 'id'), tool, input: boundInput(own(o, 'input')) }];
      }
      case 'tool_result': {
        const output = text(o, 'output');
        return output === null ? null : [{ kind: 'tool_result', id: name(o, 'id'), tool: name(o, 'tool'), output, isError: own(o, 'isError') === true }];
      }
      case 'command': {
        const command = text(o, 'command');
        const exitCode = intOrNull(o, 'exitCode');
        const durationMs = intOrNull(o, 'durationMs');
        if (command === null || exitCode === undefined || durationMs === undefined) return null;
        return [{ kind: 'command', id: name(o, 'id'), command, exitCode, output: text(o, 'output'), durationMs }];
      }
      case 'file_change': {
        const path = name(o, 'path');
        const change = str(o, 'change');
        const added = intOrNull(o, 'added');
        const removed = intOrNull(o, 'removed');
        if (path === null || (change !== 'add' && change !== 'update' && change !== 'delete') || added === undefined || removed === undefined) return null;
        return [{ kind: 'file_change', path, change, added, removed }];
      }
      case 'usage': {
        const u = obj(o, 'usage');
        if (!u) return null;
        this.st.usage = usageFrom(u);
        return [{ kind: 'usage', usage: { ...this.st.usage } }];
      }
      case 'rate_limit': {
        const status = str(o, 'status');
        if (status !== 'allowed' && status !== 'allowed_warning' && status !== 'rejected') return null;
        const resetsAt = resetOf(o);
        if (status === 'rejected') this.st.usageLimit = { resetsAt, status: null };
        return [{ kind: 'rate_limit', status, resetsAt, limitType: name(o, 'limitType') }];
      }
      case 'result':
        return this.result(o);
      default:
        return null;
    }
  }

  private result(o: JsonObject): RunLogItem[] {
    const items: RunLogItem[] = [];
    const session = name(o, 'sessionId');
    if (session) this.st.sessionId = session;
    const summary = text(o, 'summary');
    if (summary !== null) this.st.summary = summary;
    const turns = num(o, 'turns');
    if (turns !== null && turns >= 0) this.st.turns = Math.floor(turns);
    const u = obj(o, 'usage');
    if (u) {
      this.st.usage = usageFrom(u);
      items.push({ kind: 'usage', usage: { ...this.st.usage } });
    }
    const error = text(o, 'error');
    this.st.succeeded = error === null;
    this.st.error = error;
    if (error !== null) items.push({ kind: 'error', message: error });
    return items;
  }
}

export const commandDriver: Driver = {
  kind: 'command',
  defaultCommand: null,
  versionArgs: [],
  resumedUsage: 'per-run',
  sessionMissing: /no conversation found|session not found/i,
  build,
  parser: () => new CommandParser(),
};
