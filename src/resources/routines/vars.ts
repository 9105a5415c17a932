import type { StoredEvent } from '../../events/outbox.js';
import { compileFilter } from '../../events/filter.js';
import { EVENT_NAMES, eventDef } from '../../events/registry.js';
import type { Vocabulary } from '../playbooks/template.js';
import { localDate } from './cron.js';
import type { Trigger } from './schema.js';

// The variables a routine's action may name in {{placeholders}}: the firing's, the routine's, and
// for a trigger the event's. Checked when the routine is saved (an unknown one is 400), filled when
// it fires.

const FIRING_VARS = ['firing.id', 'firing.time', 'firing.date', 'firing.reason', 'routine.name'];
const EVENT_VARS = ['event.id', 'event.name', 'event.timestamp', 'event.data'];

const SAMPLES: Record<string, unknown> = {
  'firing.id': '00000000-0000-7000-8000-000000000000',
  'firing.time': '2030-01-01T00:00:00.000Z',
  'firing.date': '2030-01-01',
  'firing.reason': 'schedule',
  'routine.name': 'routine',
  'event.id': 1,
  'event.name': 'task:created',
  'event.timestamp': '2030-01-01T00:00:00.000Z',
};

/** The events a trigger hears (its `event`, read as an SSE filter; 400 naming `at` if it names none that exist). */
export function triggerEvents(event: string, at: string): string[] {
  const matches = compileFilter(event, at);
  return EVENT_NAMES.filter(matches);
}

/** The data fields of those events, for checking a filter and {{event.data.<field>}}. */
export function eventFields(names: readonly string[]): Set<string> {
  const fields = new Set<string>();
  for (const n of names) for (const k of Object.keys(eventDef(n)?.data.shape ?? {})) fields.add(k);
  return fields;
}

export function vocabulary(trigger: Trigger | null, at: string): Vocabulary {
  const fields = trigger ? eventFields(triggerEvents(trigger.event, at)) : new Set<string>();
  const names = trigger ? [...FIRING_VARS, ...EVENT_VARS] : FIRING_VARS;
  const known = (name: string) => {
    if (names.includes(name)) return true;
    if (!trigger || !name.startsWith('event.data.')) return false;
    return fields.has(name.split('.')[2]!);
  };
  return {
    known,
    sample: (name) => (Object.hasOwn(SAMPLES, name) ? SAMPLES[name] : 'x'),
    listed: `known: ${names.map((n) => `{{${n}}}`).join(', ')}${trigger ? `, {{event.data.<field>}} with a field of ${[...fields].sort().join(', ') || 'none'}` : ''}`,
    unknownMessage: (name) => (!trigger && name.startsWith('event.') ? `{{${name}}} is not a variable: only a routine with a trigger has an event` : `{{${name}}} is not a variable`),
  };
}

export interface Occasion {
  firingId: string;
  /** What the firing stands for: the schedule time, the event's time, now. */
  time: number;
  reason: string;
  event: StoredEvent | null;
}

/** The values a firing fills its action with. */
export function firingVars(routine: { name: string; schedule: { timezone: string } | null }, o: Occasion): Record<string, unknown> {
  const time = new Date(o.time).toISOString();
  return {
    routine: { name: routine.name },
    firing: { id: o.firingId, time, date: localDate(o.time, routine.schedule?.timezone ?? 'UTC'), reason: o.reason },
    ...(o.event ? { event: { id: o.event.id, name: o.event.name, timestamp: o.event.timestamp, data: o.event.data } } : {}),
  };
}
