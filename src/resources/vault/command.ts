import { Command, Option } from 'commander';
import { action, collect } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import { UsageError } from '../../cli/context.js';
import { relativeTime } from '../../lib/human.js';
import { io } from '../../cli/io.js';
import { emit, table } from '../../cli/output.js';
import { check } from '../../cli/validate.js';
import { seg } from '../../client/client.js';
import { promptValues } from '../../cli/prompt.js';
import type { VaultEntry, VaultSaved } from './schema.js';
import { VAULT_TYPES } from './values.js';

/** The API's schemas, loaded when an option needs checking (they bring zod). */
const schemas = () => import('./schema.js');

interface SetOptions {
  type: string;
  label?: string;
  fromEnv?: string[];
}

/**
 * The credentials from the arguments: KEY=VALUE as given, KEY alone prompted for (no echo), and
 * --from-env KEY (or NAME=ENV_VAR) read from the environment.
 */
async function credentialsFrom(pairs: string[], fromEnv: string[]): Promise<Record<string, string>> {
  const creds: Record<string, string> = {};
  const ask: string[] = [];
  const add = (key: string, value?: string) => {
    if (!key) throw new UsageError('a credential key is empty; write KEY=VALUE, KEY (to be prompted) or --from-env KEY');
    if (key in creds || ask.includes(key)) throw new UsageError(`credential ${key} is given twice`);
    if (value === undefined) ask.push(key);
    else creds[key] = value;
  };
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq < 0) add(p);
    else add(p.slice(0, eq), p.slice(eq + 1));
  }
  for (const spec of fromEnv) {
    const eq = spec.indexOf('=');
    const [key, variable] = eq < 0 ? [spec, spec] : [spec.slice(0, eq), spec.slice(eq + 1)];
    const value = io().env[variable];
    if (value === undefined) throw new UsageError(`--from-env ${spec}: environment variable ${variable} is not set`);
    add(key, value);
  }
  Object.assign(creds, await promptValues(ask));
  if (!Object.keys(creds).length) throw new UsageError('no credentials: give KEY=VALUE, KEY (to be prompted) or --from-env KEY');
  return creds;
}

export function vaultCommand(): Command {
  const cmd = new Command('vault').description('Per-agent credentials, sealed at rest (values are never shown)');

  cmd
    .command('ls')
    .description('List vault entries (key names only)')
    .option('--agent <agent>', 'only entries of this agent')
    .action(
      action(async (ctx, o: { agent?: string }) => {
        const entries: VaultEntry[] = [];
        let cursor: string | undefined;
        do {
          const page = await ctx.client.call<VaultEntry[]>('GET', '/api/v1/vault/entries', { query: { agent: o.agent, limit: 200, cursor } });
          entries.push(...page.data);
          const next = page.headers['x-next-cursor'];
          cursor = typeof next === 'string' && next ? next : undefined;
        } while (cursor);
        emit(ctx.json, entries, () =>
          table(
            entries,
            [
              { header: 'AGENT', value: (e) => e.agent },
              { header: 'SERVICE', value: (e) => e.service },
              { header: 'TYPE', value: (e) => e.type },
              { header: 'LABEL', value: (e) => e.label },
              { header: 'KEYS', value: (e) => e.keys },
              { header: 'UPDATED', value: (e) => relativeTime(e.updatedAt) },
            ],
            'no vault entries; add one with `svc vault set <agent> <service> --type api_key KEY`',
          ),
        );
      }),
    );

  fills(cmd.command('set <agent> <service> [credentials...]'), { 'body.credentials': '[credentials...]/--from-env' })
    .description('Create or replace the entry of agent + service. KEY=VALUE sets a value; KEY alone prompts for it without echo (or reads a line of stdin)')
    .addOption(new Option('--type <type>', 'kind of credential (required)').choices([...VAULT_TYPES]).makeOptionMandatory())
    .option('--label <label>', 'human-readable label')
    .option('--from-env <KEY>', 'take KEY from the environment variable of that name, or NAME=ENV_VAR (repeatable)', collect)
    .action(
      action(async (ctx, agent: string, service: string, pairs: string[], o: SetOptions) => {
        const credentials = await credentialsFrom(pairs, o.fromEnv ?? []);
        const body: Record<string, unknown> = { agent, service, type: o.type, credentials };
        if (o.label !== undefined) body.label = o.label;
        await check(schemas, 'VaultEntryIn', body);
        const saved = await ctx.client.post<VaultSaved>('/api/v1/vault/entries', body);
        emit(ctx.json, saved, () => `saved ${saved.agent}/${saved.service} (${saved.type}): ${saved.keys.join(', ')}\n`);
      }),
    );

  cmd
    .command('rm <agent> <service>')
    .description('Remove a vault entry')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, agent: string, service: string) => {
        await confirm(`remove the ${service} credentials of ${agent}?`, ctx.yes, `svc vault rm ${agent} ${service}`);
        const r = await ctx.client.delete<{ removed: true }>(`/api/v1/vault/entries/${seg(agent)}/${seg(service)}`);
        emit(ctx.json, r, () => `removed ${agent}/${service}\n`);
      }),
    );

  fills(cmd.command('rotate-key'), { 'body.newKey': '--new-key-env' })
    .description('Re-seal every entry under a new master key, stored where the current one is')
    .option('--new-key-env <VAR>', 'take the new key (64 hex) from this environment variable; required when the key comes from SVC_VAULT_KEY')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, o: { newKeyEnv?: string }) => {
        const body: { newKey?: string } = {};
        if (o.newKeyEnv) {
          const v = io().env[o.newKeyEnv];
          if (!v) throw new UsageError(`--new-key-env ${o.newKeyEnv}: that environment variable is not set`);
          body.newKey = v.trim();
        }
        await confirm('re-seal every vault entry under a new master key?', ctx.yes, 'svc vault rotate-key');
        const r = await ctx.client.post<{ rotated: number; source: string }>('/api/v1/vault/rotate-key', body);
        emit(ctx.json, r, () => {
          const line = `re-sealed ${r.rotated} ${r.rotated === 1 ? 'entry' : 'entries'} under a new master key (source: ${r.source})\n`;
          return r.source === 'env' ? `${line}now set SVC_VAULT_KEY to the new key before the daemon next starts\n` : line;
        });
      }),
    );

  return cmd;
}
