import type { Hold } from './schema.js';

// Why a run waits, in the same words in the CLI (`svc runs ls|show|queue`) and on the board. Pure
// and free of the CLI's modules so that the board bundles it; each says a time its own way (the
// CLI "in 2h", the board "at 15:00" in the viewer's zone), so the time is the caller's.

/** Why a run waits, in a few words, with `when` saying when it ends ("in 2h", "at 15:00"); null when nothing holds it. */
export function holdWords(h: Hold | null | undefined, when: (iso: string) => string): string | null {
  if (!h) return null;
  switch (h.kind) {
    case 'backoff':
      return `retry backoff, tried again ${when(h.until)}`;
    case 'provider':
      return `${h.provider}'s usage limit, resets ${when(h.until)}`;
    case 'budget':
      return `${h.scope === 'agent' ? `${h.agent}'s` : "the project's"} ${h.period} budget is spent, renews ${when(h.until)}`;
    case 'resume':
      return 'paused: waits for someone to resume it (svc runs resume)';
    case 'concurrency':
      return `the agent runs ${h.running} of its maxConcurrency ${h.limit}`;
    case 'slots':
      return `the runner is full: ${h.running} of ${h.capacity} slots`;
  }
}
