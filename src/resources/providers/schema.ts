import { z } from 'zod';
import { Timestamp } from '../common.js';

export const ProviderStatusOut = z.object({
  configKey: z.string().describe('Where in project.json a key can be put (providers.<id>.apiKey).'),
  envVar: z.string().describe('The environment variable the key is read from.'),
  hasEnvKey: z.boolean(),
  hasConfigKey: z.boolean(),
  profiles: z.array(z.object({ name: z.string(), type: z.string() })).describe('OAuth profiles, metadata only. None are configured by svc today.'),
  status: z.enum(['active', 'cooldown', 'billing_disabled', 'expired', 'unconfigured']),
  cooldownUntil: Timestamp.optional(),
  disabledUntil: Timestamp.optional(),
  lastErrorReason: z.string().optional(),
  errorCount: z.int(),
  pausedUntil: Timestamp.optional().describe(
    "An agent's CLI ran into a usage limit of this provider: its runs are paused until then (the limit's reset, or the provider's backoff); cooldownUntil says the same.",
  ),
  runsWaiting: z.int().describe('Runs of agents on this provider that wait for its pause to end (queued, and paused by its usage limit); 0 when it is not paused.'),
});

export const AuthStatusOut = z.object({ providers: z.record(z.string(), ProviderStatusOut) });

export type ProviderStatusInfo = z.output<typeof ProviderStatusOut>;
