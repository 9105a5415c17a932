import type { RunLogItem } from './types.js';

// A run's log as it streams: items numbered in order, bounded per run, written in batches (one
// transaction and one run:activity event per flush, never one per line: a CLI may print
// thousands of lines a second). Pure: the runner decides when to flush and where it goes.

export type StoredItem = RunLogItem | { kind: 'truncated'; dropped: number };
export interface Numbered {
  seq: number;
  at: string;
  item: StoredItem;
}

/** Text in a run:activity event is cut to this; the stored log keeps what the driver gave (cut at 16 KiB). */
export const EVENT_TEXT_MAX = 2048;
/** A stored item's JSON is at most this; a bigger one is kept as a cut raw item. */
const ITEM_JSON_MAX = 64 * 1024;

export class RunLogBuffer {
  private pending: Numbered[] = [];
  private next: number;
  private kept: number;
  private dropped = 0;

  constructor(
    private readonly max: number,
    /** Items already stored (a run's log continues where it is). */
    already = 0,
  ) {
    this.next = already + 1;
    this.kept = already;
  }

  /** Takes one item; past the bound it is only counted. */
  push(item: RunLogItem, at: string): void {
    if (this.kept >= this.max) {
      this.dropped++;
      return;
    }
    this.kept++;
    this.pending.push({ seq: this.next++, at, item: bounded(item) });
  }

  /** The items to write now (and forgets them). */
  take(): Numbered[] {
    const out = this.pending;
    this.pending = [];
    return out;
  }

  get size(): number {
    return this.pending.length;
  }

  /** At the end: a marker saying how many items were left out, if any (stored past the bound). */
  closing(at: string): Numbered | null {
    if (!this.dropped) return null;
    const n: Numbered = { seq: this.next++, at, item: { kind: 'truncated', dropped: this.dropped } };
    this.kept++;
    return n;
  }

  get count(): number {
    return this.kept;
  }

  get droppedCount(): number {
    return this.dropped;
  }
}

function bounded(item: RunLogItem): RunLogItem {
  const json = JSON.stringify(item);
  if (json.length <= ITEM_JSON_MAX) return item;
  return { kind: 'raw', text: `${json.slice(0, ITEM_JSON_MAX - 64)}… [cut: ${json.length} characters]` };
}

const cut = (s: string, max = EVENT_TEXT_MAX): string => (s.length <= max ? s : `${s.slice(0, max)}…`);

/** An item as a run:activity event carries it: every text cut to EVENT_TEXT_MAX, a bigger object (a tool's input) as cut JSON text. */
export function eventItem(n: Numbered): Record<string, unknown> & { seq: number; kind: string } {
  const out: Record<string, unknown> = { seq: n.seq };
  for (const [k, v] of Object.entries(n.item)) {
    if (typeof v === 'string') out[k] = cut(v);
    else if (v !== null && typeof v === 'object') {
      const json = JSON.stringify(v);
      out[k] = json.length <= EVENT_TEXT_MAX ? v : cut(json);
    } else out[k] = v;
  }
  return out as Record<string, unknown> & { seq: number; kind: string };
}
