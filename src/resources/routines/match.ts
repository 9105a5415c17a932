import { compileFilter, type EventMatcher } from '../../events/filter.js';
import { compileDataFilter, type DataFilter } from './filter.js';
import type { Trigger } from './schema.js';

// Which triggers an event sets off, fast enough to run for every event with a thousand triggers:
// triggers are grouped by event name once, and within a name by the value one of their equality
// conditions asks of a top-level field ({"to": "failed"}, {"title": ["a", "b"]}), so an event
// costs a map lookup per such field, and a full check only for the triggers that could match.

interface Armed {
  name: string;
  event: EventMatcher;
  filter: DataFilter | null;
  data: (d: Record<string, unknown>) => boolean;
}

interface ByName {
  /** field → value asked → triggers asking it. */
  fields: Map<string, Map<unknown, Armed[]>>;
  /** Triggers with no equality condition on a top-level field: checked whole. */
  rest: Armed[];
  /** Whether any trigger hears this event at all. */
  any: boolean;
}

const isScalar = (v: unknown) => v === null || typeof v !== 'object';

/** The equality condition a trigger is filed under: its first on a top-level field. */
function keyOf(filter: DataFilter | null): { field: string; values: unknown[] } | null {
  for (const [path, c] of Object.entries(filter ?? {})) {
    if (path.includes('.')) continue;
    if (isScalar(c)) return { field: path, values: [c] };
    if (Array.isArray(c) && c.every(isScalar)) return { field: path, values: c };
  }
  return null;
}

export class TriggerIndex {
  private readonly armed: Armed[];
  private readonly byName = new Map<string, ByName>();

  constructor(triggers: { name: string; trigger: Trigger }[]) {
    this.armed = triggers.map(({ name, trigger }) => ({
      name,
      event: compileFilter(trigger.event, 'trigger.event'),
      filter: trigger.filter ?? null,
      data: compileDataFilter(trigger.filter),
    }));
  }

  private of(eventName: string): ByName {
    let b = this.byName.get(eventName);
    if (b) return b;
    b = { fields: new Map(), rest: [], any: false };
    for (const a of this.armed) {
      if (!a.event(eventName)) continue;
      b.any = true;
      const key = keyOf(a.filter);
      if (!key) {
        b.rest.push(a);
        continue;
      }
      let values = b.fields.get(key.field);
      if (!values) b.fields.set(key.field, (values = new Map()));
      for (const v of new Set(key.values)) {
        const list = values.get(v);
        if (list) list.push(a);
        else values.set(v, [a]);
      }
    }
    this.byName.set(eventName, b);
    return b;
  }

  /** Whether any trigger hears events of this name (before their data is looked at). */
  hears(eventName: string): boolean {
    return this.of(eventName).any;
  }

  /** The routines whose trigger matches the event, name and data. */
  matching(eventName: string, data: Record<string, unknown>): string[] {
    const b = this.of(eventName);
    if (!b.any) return [];
    const out: string[] = [];
    for (const a of b.rest) if (a.data(data)) out.push(a.name);
    for (const [field, values] of b.fields) {
      const v = Object.hasOwn(data, field) ? data[field] : null;
      const list = isScalar(v) ? values.get(v ?? null) : undefined;
      if (list) for (const a of list) if (a.data(data)) out.push(a.name);
    }
    return out;
  }
}
