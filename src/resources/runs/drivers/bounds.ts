import { isAbsolute, relative } from 'node:path';
import { MAX_JSON_DEPTH, nestedDeeperThan, parseJson } from '../../../lib/json.js';
import { ZERO_USAGE, type RunLogItem, type StreamParser, type StreamState } from '../types.js';

// What every driver's parser shares: the bounds of a log item, a defensive JSON line reader and
// own-property readers for the CLIs' objects. A CLI's stream is input from a program svc does not
// control (and that a model steers): any line may be huge, deep, malformed or shaped unexpectedly,
// and none of that may throw, stall the daemon or grow its memory without bound.

/** The most UTF-8 bytes of text one log item keeps (a message, a command's output, a raw line). */
export const ITEM_TEXT_MAX = 16 * 1024;

/** A name in an item (a tool, a path, a limit type) is cut shorter. */
export const ITEM_NAME_MAX = 1024;

/**
 * Lines longer than this (in UTF-16 units) are not parsed at all: they become a cut `raw` item.
 * The supervisor cuts lines at its maxLineBytes first; this bound holds whatever it is set to.
 */
export const PARSE_LINE_MAX = 8 * 1024 * 1024;

/** How many calls a parser remembers while it waits for their results (oldest forgotten first). */
export const PENDING_CALLS_MAX = 1000;

/** `text` with each lone surrogate (invalid UTF-16, which a JSON escape can make) replaced by U+FFFD. */
export const wellFormed = (text: string): string => text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');

/**
 * `text` cut to `max` UTF-8 bytes, with a marker saying how much was cut. The cut never splits a
 * character, and the text kept is well-formed (lone surrogates become U+FFFD).
 */
export function cutText(text: string, max = ITEM_TEXT_MAX): string {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: short texts need no count.
  if (text.length * 3 <= max) return wellFormed(text);
  const bytes = Buffer.byteLength(text);
  if (bytes <= max) return wellFormed(text);
  // Buffer.from writes a lone surrogate as U+FFFD; a pair is not cut in two.
  const head = Buffer.from(text.slice(0, /[\uD800-\uDBFF]/.test(text[max - 1] ?? '') ? max - 1 : max));
  let end = Math.min(max, head.length);
  // Never end inside a character: back up over UTF-8 continuation bytes to a character's start.
  while (end > 0 && end < head.length && (head[end]! & 0xc0) === 0x80) end--;
  const kept = head.subarray(0, end).toString('utf8');
  return `${kept}… [${bytes - end} more bytes cut]`;
}

/**
 * A tool's input for a log item: the value itself when its JSON fits the item bound, else its
 * JSON text cut to the bound (a 1 MB file a Write call carries is not kept whole in the log).
 */
export function boundInput(input: unknown): unknown {
  if (input === undefined) return null;
  const json = JSON.stringify(input) ?? 'null';
  return json.length * 3 <= ITEM_TEXT_MAX || Buffer.byteLength(json) <= ITEM_TEXT_MAX ? input : cutText(json);
}

export type JsonObject = Record<string, unknown>;

/**
 * One stdout line as a JSON object, or null when it is not one (too long, nested deeper than
 * MAX_JSON_DEPTH, malformed, an array or a scalar). Never throws.
 */
export function parseLine(line: string): JsonObject | null {
  if (line.length > PARSE_LINE_MAX) return null;
  const t = line.trim();
  if (!t.startsWith('{') || nestedDeeperThan(t, MAX_JSON_DEPTH)) return null;
  const r = parseJson(t);
  return r.ok && isObject(r.value) ? r.value : null;
}

export const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An own property of a parsed object (never one of Object.prototype's: `constructor`, `__proto__`). */
export const own = (o: unknown, key: string): unknown => (isObject(o) && Object.hasOwn(o, key) ? o[key] : undefined);

export const str = (o: unknown, key: string): string | null => {
  const v = own(o, key);
  return typeof v === 'string' ? v : null;
};

/** A finite number, or null. */
export const num = (o: unknown, key: string): number | null => {
  const v = own(o, key);
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
};

/** A count: a finite number ≥ 0, else 0 (a token count the CLI left out or garbled). */
export const count = (o: unknown, key: string): number => Math.max(0, Math.floor(num(o, key) ?? 0));

export const obj = (o: unknown, key: string): JsonObject | null => {
  const v = own(o, key);
  return isObject(v) ? v : null;
};

export const arr = (o: unknown, key: string): unknown[] => {
  const v = own(o, key);
  return Array.isArray(v) ? v : [];
};

/** A line kept as it was, cut to the item bound. */
export const rawItem = (line: string): RunLogItem => ({ kind: 'raw', text: cutText(line) });

/** `path` relative to the workspace when it lies inside it, else as the CLI said it. */
export function showPath(path: string, cwd: string | undefined): string {
  if (cwd && isAbsolute(path)) {
    const rel = relative(cwd, path);
    if (rel && !rel.startsWith('..') && !isAbsolute(rel)) return cutText(rel, ITEM_NAME_MAX);
  }
  return cutText(path, ITEM_NAME_MAX);
}

/** The number of lines a text holds (a last line without a newline counts). */
export const lineCount = (text: string): number => (text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0));

/** A Map that forgets its oldest entry past `max` (calls whose results never come). */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(private readonly max = PENDING_CALLS_MAX) {
    super();
  }
  override set(key: K, value: V): this {
    if (!this.has(key) && this.size >= this.max) this.delete(this.keys().next().value as K);
    return super.set(key, value);
  }
}

/** A reset time the CLI gave in epoch seconds, as ISO; null when absent or not a plausible time. */
export const isoFromEpochSeconds = (s: number | null): string | null => {
  if (s === null || s <= 0 || s > 1e11) return null;
  return new Date(s * 1000).toISOString();
};

/**
 * A parser of JSON lines: a blank line is nothing, a line that is not a JSON object (or that
 * `read` does not know: it answers null) is one `raw` item. `st` is the state the stream built;
 * state() hands out a copy.
 */
export abstract class JsonLinesParser implements StreamParser {
  protected st: StreamState = { sessionId: null, usage: { ...ZERO_USAGE }, turns: 0, summary: null, succeeded: null, error: null, usageLimit: null, idle: false };

  state(): StreamState {
    return { ...this.st, usage: { ...this.st.usage }, usageLimit: this.st.usageLimit && { ...this.st.usageLimit } };
  }

  line(text: string): RunLogItem[] {
    if (text.trim() === '') return [];
    const o = parseLine(text);
    return (o && this.read(o)) ?? [rawItem(text)];
  }

  /** The items of one JSON object line, or null when the parser does not know its shape. */
  protected abstract read(o: JsonObject): RunLogItem[] | null;
}
