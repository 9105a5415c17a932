import { route } from '../../app.js';
import { Budgets, BudgetsOut, UsagePeriodsOut } from './schema.js';
import { budgetsInForce, budgetStates, putBudgets, usagePeriods, type InForce } from './service.js';
import type { App } from '../../app.js';

const tag = 'Runs';

const answer = async (app: App, f: InForce) => ({ ...f, states: (await budgetStates(app)).map(({ key: _k, end: _e, ...s }) => s) });

export const budgetRoutes = [
  route({
    method: 'GET',
    path: '/api/v1/budgets',
    operationId: 'getBudgets',
    summary: 'The budgets in force, where they come from, and what each has spent in its period',
    description:
      'Budgets limit tokens or cost (USD, where the CLI reports it) per agent or for the whole project, per day, week or month in `budgets.timeZone`. At 80 % a budget:warning is said, at 100 % budget:exceeded: new runs of the scope wait until the period rolls over or the limit is raised, and live ones stop after their current turn (paused). Spend is summed over the runs created in the period.',
    tag,
    response: BudgetsOut,
    handler: async ({ app }) => await answer(app, await budgetsInForce(app)),
  }),
  route({
    method: 'PUT',
    path: '/api/v1/budgets',
    operationId: 'putBudgets',
    summary: "Set the budgets (they replace project.json's until its budgets change)",
    description:
      "The body has project.json's `budgets` shape. It is kept in the state (a restart keeps it) and is in force as long as project.json's `budgets` stay what they were when it was PUT: an edit of the file wins from then on. A budget with no limit, an unknown period, a negative amount or a time zone that is not one: 400 naming the field. Runs a raised limit no longer holds start at once (budget:updated).",
    tag,
    body: Budgets,
    response: BudgetsOut,
    handler: async ({ app, body }) => await answer(app, await putBudgets(app, body)),
  }),
  route({
    method: 'GET',
    path: '/api/v1/usage/periods',
    operationId: 'getUsagePeriods',
    summary: 'Spend per agent and for the project today, this week and this month, with their budgets (svc usage)',
    description: "Periods in the budgets' time zone (`budgets.timeZone`, default UTC); runs count in the period they were created in.",
    tag,
    response: UsagePeriodsOut,
    handler: async ({ app }) => await usagePeriods(app),
  }),
];
