// The values of this resource's enums and its limits, apart from its zod schemas: the CLI offers
// them as choices without loading zod.

export const CONCURRENCY = ['skip', 'queue', 'allow'] as const;
export const CATCH_UP = ['none', 'one'] as const;
/** fired: its action ran and created work. skipped: not run, and why. failed: the action was refused. queued: waits for the previous firing's work. */
export const FIRING_STATUSES = ['fired', 'skipped', 'failed', 'queued'] as const;
/** What started a firing: its schedule, a schedule missed while no daemon ran, an event, a person. */
export const FIRING_REASONS = ['schedule', 'catch_up', 'event', 'manual'] as const;

/** A trigger storm's bound: firings per routine per minute unless the routine says otherwise. */
export const DEFAULT_MAX_FIRINGS_PER_MINUTE = 60;
export const MAX_FIRINGS_PER_MINUTE = 10_000;
/**
 * How many routines a chain of firings may pass through: an event caused by a firing's work (its
 * tasks and missions, their runs) or by a routine's own events carries the chain of routines that
 * led to it, and a firing whose chain would grow past this is skipped.
 */
export const MAX_DEPTH = 5;
/** A firing found due no later than this after its time fires as usual (a busy daemon, not a missed one). */
export const MISFIRE_GRACE_MS = 60_000;
/** How many firings wait at most with concurrency "queue"; more are skipped. */
export const MAX_QUEUED = 10;
/** How many firings each routine's history keeps (queued ones are always kept). */
export const KEEP_FIRINGS = 100;
