import { Command } from 'commander';
import { action } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import { emit, table } from '../../cli/output.js';
import { check } from '../../cli/validate.js';
import { seg } from '../../client/client.js';
import type { Team } from './schema.js';

/** The API's schemas, loaded when an option needs checking (they bring zod). */
const schemas = () => import('./schema.js');

export function teamsCommand(): Command {
  const cmd = new Command('teams').description('Manage teams of agents');

  cmd
    .command('ls')
    .description('List teams')
    .action(
      action(async (ctx) => {
        const teams = await ctx.client.get<Team[]>('/api/v1/agents/teams');
        emit(ctx.json, teams, () =>
          table(
            teams,
            [
              { header: 'NAME', value: (t) => t.name },
              { header: 'AGENTS', value: (t) => t.agents },
              { header: 'DESCRIPTION', value: (t) => t.description },
            ],
            'no teams; add one with `svc teams add <name>`',
          ),
        );
      }),
    );

  cmd
    .command('add <name>')
    .description('Add a team')
    .option('-d, --description <text>', 'what the team is for', '')
    .action(
      action(async (ctx, name: string, o: { description: string }) => {
        await check(schemas, 'TeamIn', { name, description: o.description });
        const r = await ctx.client.post<{ added: true }>('/api/v1/agents/teams', { name, description: o.description });
        emit(ctx.json, r, () => `added team ${name}\n`);
      }),
    );

  fills(cmd.command('rename <oldName> <newName>'), { 'body.name': '<newName>' })
    .description('Rename a team (its agents follow)')
    .action(
      action(async (ctx, oldName: string, name: string) => {
        await check(schemas, 'TeamRename', { oldName, name });
        await ctx.client.patch<null>('/api/v1/agents/team', { oldName, name });
        emit(ctx.json, { renamed: true, oldName, name }, () => `renamed team ${oldName} to ${name}\n`);
      }),
    );

  cmd
    .command('rm <name>')
    .description('Remove a team (refused while agents belong to it)')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, name: string) => {
        await confirm(`remove team ${name}?`, ctx.yes, `svc teams rm ${name}`);
        const r = await ctx.client.delete<{ removed: true }>(`/api/v1/agents/teams/${seg(name)}`);
        emit(ctx.json, r, () => `removed team ${name}\n`);
      }),
    );

  return cmd;
}
