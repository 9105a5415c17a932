import type { ChatMessage } from './schema.js';

export type ToolCall = NonNullable<ChatMessage['tool_calls']>[number];

/**
 * A streamed answer's tool calls arrive as fragments keyed by `index`: the first carries the id and
 * the name, the rest pieces of the arguments. This is the one place they are put back together,
 * for the agent path and the orchestrator alike, so a session never keeps (and an upstream is
 * never sent) a call in pieces. A fragment without an index continues the last call.
 */
export function mergeToolCalls(fragments: readonly unknown[]): ToolCall[] {
  const byIndex = new Map<number, ToolCall>();
  let last = -1;
  for (const raw of fragments) {
    if (!raw || typeof raw !== 'object') continue;
    const f = raw as { index?: unknown; id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } };
    const i = typeof f.index === 'number' && Number.isInteger(f.index) && f.index >= 0 ? f.index : Math.max(last, 0);
    last = i;
    let call = byIndex.get(i);
    if (!call) {
      call = { id: '', type: 'function', function: { name: '', arguments: '' } };
      byIndex.set(i, call);
    }
    if (typeof f.id === 'string' && f.id) call.id = f.id;
    if (typeof f.type === 'string' && f.type) call.type = f.type;
    // The name comes whole (some upstreams repeat it in every fragment): it is set, not appended.
    if (typeof f.function?.name === 'string' && f.function.name) call.function.name = f.function.name;
    if (typeof f.function?.arguments === 'string') call.function.arguments += f.function.arguments;
  }
  return [...byIndex.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c);
}
