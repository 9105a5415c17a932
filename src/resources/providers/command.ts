import { Command } from 'commander';
import { action } from '../../cli/action.js';
import { relativeTime } from '../../lib/human.js';
import { emit, style, table } from '../../cli/output.js';
import type { ProviderStatusInfo } from './schema.js';
import { systemClock } from '../../lib/clock.js';

const colour = (s: ProviderStatusInfo['status']): string => (s === 'active' ? style.green(s) : s === 'unconfigured' ? style.dim(s) : s === 'cooldown' ? style.yellow(s) : style.red(s));

export function authCommand(): Command {
  const cmd = new Command('auth').description('Model providers: keys, cooldowns and billing status');
  cmd
    .command('status')
    .description("One row per provider: whether a key is set, whether it is cooling down after upstream errors, and how many runs wait for its usage limit's reset")
    .action(
      action(async (ctx) => {
        const { providers } = await ctx.client.get<{ providers: Record<string, ProviderStatusInfo> }>('/api/v1/auth/status');
        const rows = Object.entries(providers).map(([id, p]) => ({ id, ...p }));
        const now = systemClock.now();
        emit(ctx.json, { providers }, () =>
          table(rows, [
            { header: 'PROVIDER', value: (p) => p.id },
            { header: 'STATUS', value: (p) => colour(p.status) },
            // A provider paused for an agent's CLI (which logs in on its own) may have no key here either.
            { header: 'KEY', value: (p) => (p.hasConfigKey ? 'project.json' : p.hasEnvKey ? p.envVar : p.status === 'unconfigured' || p.pausedUntil ? `set ${p.envVar}` : 'not needed') },
            { header: 'UNTIL', value: (p) => ((p.disabledUntil ?? p.cooldownUntil) ? relativeTime(p.disabledUntil ?? p.cooldownUntil!, now) : null) },
            { header: 'RUNS WAITING', value: (p) => (p.pausedUntil ? p.runsWaiting : null) },
            { header: 'ERRORS', value: (p) => p.errorCount || null },
            { header: 'LAST ERROR', value: (p) => p.lastErrorReason ?? null, flex: true },
          ]),
        );
      }),
    );
  return cmd;
}
