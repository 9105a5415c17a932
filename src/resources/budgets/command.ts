import { Command } from 'commander';
import { action } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { readDataFile } from '../../cli/data-file.js';
import { UsageError } from '../../cli/context.js';
import { formatTokens, relativeTime } from '../../lib/human.js';
import { emit, style, table } from '../../cli/output.js';
import { check } from '../../cli/validate.js';
import type { BudgetStateOut, Budgets } from './schema.js';
import { systemClock } from '../../lib/clock.js';

/** The API's schemas, loaded when a file needs checking (they bring zod). */
const schemas = () => import('./schema.js');

type Answer = { source: string; updatedAt: string | null; budgets: Budgets; states: BudgetStateOut[] };

const money = (usd: number) => `$${usd.toFixed(usd < 1 ? 4 : 2)}`;
const amount = (v: { tokens: number | null; costUsd: number | null }) =>
  [v.tokens === null ? null : `${formatTokens(v.tokens)} tokens`, v.costUsd === null ? null : money(v.costUsd)].filter(Boolean).join(' / ');

function budgetTable(a: Answer): string {
  const now = systemClock.now();
  const from = a.source === 'api' ? `set through the API ${relativeTime(a.updatedAt, now)} (until project.json's budgets change)` : 'from project.json';
  return (
    table(
      a.states,
      [
        { header: 'SCOPE', value: (s) => (s.scope === 'agent' ? s.agent : style.bold('(project)')) },
        { header: 'PERIOD', value: (s) => s.period },
        { header: 'SPENT', value: (s) => amount({ tokens: s.limit.tokens === null ? null : s.spent.tokens, costUsd: s.limit.costUsd === null ? null : s.spent.costUsd }) },
        { header: 'LIMIT', value: (s) => amount(s.limit) },
        { header: '%', value: (s) => s.percent },
        { header: 'STATE', value: (s) => (s.state === 'exceeded' ? style.red(s.state) : s.state === 'warning' ? style.yellow(s.state) : s.state) },
        { header: 'ROLLS OVER', value: (s) => relativeTime(s.periodEnd, now), flex: true },
      ],
      'no budgets; set them in project.json (budgets) or with `svc budgets set <file>`',
    ) + style.dim(`(${from}; periods in ${a.budgets.timeZone})\n`)
  );
}

export function budgetsCommand(): Command {
  const cmd = new Command('budgets').description("Budgets of the agents' runs: tokens or cost per agent or project, per day, week or month");
  cmd
    .command('show', { isDefault: true })
    .description('The budgets in force and what each has spent in its period')
    .action(
      action(async (ctx) => {
        const a = await ctx.client.get<Answer>('/api/v1/budgets');
        emit(ctx.json, a, () => budgetTable(a));
      }),
    );
  fills(cmd.command('set <file>'), { body: '<file>' })
    .description(
      "Set the budgets from a JSON or YAML file shaped as project.json's budgets: {timeZone?, limits: [{agent?, period, tokens?, costUsd?}]}; they apply until project.json's budgets change",
    )
    .action(
      action(async (ctx, file: string) => {
        const body = await readDataFile(file);
        if (!body || typeof body !== 'object' || Array.isArray(body)) throw new UsageError(`${file} must hold an object`);
        await check(schemas, 'Budgets', body);
        const a = await ctx.client.call<Answer>('PUT', '/api/v1/budgets', { body });
        emit(ctx.json, a.data, () => budgetTable(a.data));
      }),
    );
  return cmd;
}
