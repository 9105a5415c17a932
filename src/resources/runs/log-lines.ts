// A run's log items as lines people read (`svc runs logs`): one line per item, the CLI's own
// words, never more than a screen's width of a tool's input. Pure, so it is tested without a run.

export interface LogLineItem {
  seq: number;
  at: string;
  kind: string;
  [field: string]: unknown;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : v === null || v === undefined ? '' : JSON.stringify(v));
const oneLine = (s: string, max: number): string => {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
};
const seconds = (ms: unknown): string => (typeof ms === 'number' ? `${(ms / 1000).toFixed(1)} s` : '');

/** What a tool call's input says in a few words: a command, a path, a pattern; else its JSON. */
function inputGist(tool: string, input: unknown): string {
  if (input && typeof input === 'object' && !Array.isArray(input)) {
    const o = input as Record<string, unknown>;
    for (const k of ['command', 'file_path', 'path', 'pattern', 'url', 'query', 'description']) if (typeof o[k] === 'string') return o[k] as string;
  }
  return tool ? str(input) : '';
}

/** One readable line for an item (without a newline); `width` bounds what a single field may take. */
export function formatLogItem(item: LogLineItem, width = 100): string {
  const w = Math.max(20, width - 12);
  switch (item.kind) {
    case 'text':
      return str(item.text).trim();
    case 'thinking':
      return `… ${oneLine(str(item.text), w)}`;
    case 'tool_call':
      return `▸ ${str(item.tool)}  ${oneLine(inputGist(str(item.tool), item.input), w)}`;
    case 'tool_result':
      return `  ${item.isError ? '✗' : '↳'} ${oneLine(str(item.output), w)}`;
    case 'command': {
      const done = item.exitCode === null || item.exitCode === undefined ? 'running' : `exit ${str(item.exitCode)}`;
      const took = seconds(item.durationMs);
      return `▸ Bash  ${oneLine(str(item.command), w)}  (${done}${took ? `, ${took}` : ''})`;
    }
    case 'file_change': {
      const lines = typeof item.added === 'number' || typeof item.removed === 'number' ? ` +${Number(item.added ?? 0)} −${Number(item.removed ?? 0)}` : '';
      const mark = item.change === 'add' ? '✚' : item.change === 'delete' ? '✖' : '✎';
      return `${mark} ${str(item.path)}${lines}`;
    }
    case 'usage': {
      const u = (item.usage ?? {}) as Record<string, unknown>;
      const cost = typeof u.costUsd === 'number' ? `, $${u.costUsd.toFixed(4)}` : '';
      return `· tokens ${Number(u.inputTokens ?? 0)} in, ${Number(u.outputTokens ?? 0)} out${cost}`;
    }
    case 'rate_limit':
      return `⚠ rate limit ${str(item.status)}${item.resetsAt ? ` until ${str(item.resetsAt)}` : ''}${item.limitType ? ` (${str(item.limitType)})` : ''}`;
    case 'error':
      return `✗ ${oneLine(str(item.message), w)}`;
    case 'stderr':
      return `! ${str(item.text)}`;
    case 'system':
      return `· ${oneLine(str(item.text), w)}`;
    case 'truncated':
      return `· ${Number(item.dropped)} more items were left out (runner.maxLogItems)`;
    default:
      return str(item.text ?? item);
  }
}
