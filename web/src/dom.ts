// A few DOM helpers: elements are built, never parsed from strings (no innerHTML), so nothing the
// API returns can become markup.

import { formatDuration } from '../../src/lib/human.js';

export type Child = Node | string | number | null | undefined | false | Child[];
type Props = Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props | null = null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
      else if (k === 'class') el.className = String(v);
      else if (k === 'text') el.textContent = String(v);
      else if (k === 'value') (el as HTMLInputElement).value = String(v);
      else if (v === true) el.setAttribute(k, '');
      else el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** A word longer than this may not fit a lane: it gets break opportunities at its joints. */
const LONG_WORD = 14;
/**
 * Where a long word may break, as the Chicago Manual breaks a URL: after a slash, a colon and the
 * like; before a dot, an underscore or a #, so they start the next line ("service" / ".ts"); and
 * before a camelCase hump. A hyphen needs nothing: browsers already break after one.
 */
const JOINT = /(?<=[/\\:=&?,;|+@])(?=[^/])|(?<=[^._#])(?=[._#])|(?<=[a-z])(?=[A-Z])/;

/**
 * Text whose long words (paths, identifiers, URLs) wrap at their joints rather than at whatever
 * letter meets the edge: <wbr> at each joint of a word over LONG_WORD characters. Shorter words
 * wrap whole; CSS `overflow-wrap: anywhere` stays the last resort for a long word with no joint.
 */
export function breakable(text: string): Child[] {
  const out: Child[] = [];
  for (const part of text.split(/(\s+)/)) {
    if (part.length <= LONG_WORD) {
      out.push(part);
      continue;
    }
    const pieces = part.split(JOINT);
    pieces.forEach((p, i) => out.push(...(i ? [document.createElement('wbr'), p] : [p])));
  }
  return out;
}

/** "3 m ago", "in 4 m", "just now": readable times, with the exact one in the element's title. */
export function relative(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const d = t - now;
  const a = Math.abs(d);
  let text: string;
  if (a < 10_000) return 'just now';
  if (a < 60_000) text = `${Math.round(a / 1000)} s`;
  else if (a < 3_600_000) text = `${Math.round(a / 60_000)} m`;
  else if (a < 86_400_000) text = `${Math.round(a / 3_600_000)} h`;
  else text = `${Math.round(a / 86_400_000)} d`;
  return d < 0 ? `${text} ago` : `in ${text}`;
}

/** A <time> that keeps itself readable: refreshTimes() updates every one on the page. */
export function time(iso: string | null | undefined): HTMLElement | string {
  if (!iso) return '';
  return h('time', { datetime: iso, title: new Date(iso).toLocaleString(), 'data-rel': '' }, relative(iso));
}

export function refreshTimes(root: ParentNode = document): void {
  for (const el of root.querySelectorAll<HTMLTimeElement>('time[data-rel]')) {
    const text = relative(el.dateTime);
    if (el.textContent !== text) el.textContent = text;
  }
}

/** Time left on a lease, "4 m left", or "expired". */
export function timeLeft(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '';
  const ms = Date.parse(iso) - now;
  if (ms <= 0) return 'expired';
  if (ms < 60_000) return `${Math.ceil(ms / 1000)} s left`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} m left`;
  return `${Math.round(ms / 3_600_000)} h left`;
}

export const shortId = (id: string): string => id.slice(-8);

export const label = (text: string, control: HTMLElement): HTMLElement => h('label', null, h('span', null, text), control);

export function select(id: string, options: [string, string][], value: string, onChange?: (v: string) => void, extra: Record<string, unknown> = {}): HTMLSelectElement {
  const s = h(
    'select',
    { id, ...extra, onchange: onChange ? (e: Event) => onChange((e.target as HTMLSelectElement).value) : undefined },
    ...options.map(([v, t]) => h('option', { value: v, selected: v === value }, t)),
  );
  s.value = value;
  return s;
}

/** How long since `iso`, "1m 05s", kept current by refreshElapsed() (a live run's clock). */
export function elapsed(iso: string): HTMLElement {
  return h('span', { class: 'elapsed', 'data-since': iso }, formatDuration(Date.now() - Date.parse(iso)));
}

export function refreshElapsed(root: ParentNode = document): void {
  for (const el of root.querySelectorAll<HTMLElement>('[data-since]')) {
    const text = formatDuration(Date.now() - Date.parse(el.dataset.since!));
    if (el.textContent !== text) el.textContent = text;
  }
}
