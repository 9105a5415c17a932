import { z } from 'zod';

// Schemas shared by several resources.

export const RESERVED_AGENT_NAMES = ['team', 'teams'];

/** Agent and team names: they appear in paths, CLI arguments and file names, so keep them plain. */
export const NameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit');

export const Timestamp = z.iso.datetime().describe('ISO 8601 UTC with milliseconds.');

export const Removed = z.object({ removed: z.literal(true) });

/** `{name}` path parameter. */
export const NameParam = z.strictObject({ name: z.string().min(1).max(128) });
