import { z } from 'zod';
import { Timestamp } from '../common.js';
import { BUDGET_PERIODS } from '../../lib/periods.js';
import { BudgetsConfig } from '../../config/budgets.js';

// Budgets (docs/runs.md, Budgets): limits of tokens or cost per agent or for the whole project, per
// day, week or month. The same schema (config/budgets.ts) checks project.json's `budgets` and PUT
// /api/v1/budgets.

/** The same, as PUT /api/v1/budgets takes it and GET answers it (one named schema in the OpenAPI document). */
export const Budgets = BudgetsConfig.meta({ id: 'Budgets' });
export type Budgets = z.output<typeof Budgets>;

const Spent = z.object({ tokens: z.int(), costUsd: z.number() });
const Limit = z.object({ tokens: z.int().nullable(), costUsd: z.number().nullable() }).meta({ id: 'BudgetLimitAmount' });

export const BudgetStateOut = z
  .object({
    scope: z.enum(['project', 'agent']),
    agent: z.string().nullable(),
    period: z.enum(BUDGET_PERIODS),
    periodStart: Timestamp,
    periodEnd: Timestamp.describe('When the period rolls over: runs it held start then.'),
    limit: Limit,
    spent: Spent,
    percent: z.number().describe('Of the limit spent (the higher of tokens and cost when both are limited).'),
    state: z.enum(['ok', 'warning', 'exceeded']).describe('warning from 80 %, exceeded from 100 %: new runs of the scope wait, live ones stop after their turn.'),
  })
  .meta({ id: 'BudgetState' });
export type BudgetStateOut = z.output<typeof BudgetStateOut>;

export const BudgetsOut = z
  .object({
    source: z
      .enum(['project.json', 'api'])
      .describe("Where the budgets in force come from: project.json's `budgets`, or the last PUT /api/v1/budgets (which applies until project.json's budgets change)."),
    updatedAt: Timestamp.nullable().describe('When they were PUT (null: from project.json).'),
    budgets: Budgets,
    states: z.array(BudgetStateOut).describe('Each budget in its current period: spent, percent, state.'),
  })
  .meta({ id: 'BudgetsInForce' });

const PeriodSpend = z
  .object({
    tokens: z.int(),
    costUsd: z.number().nullable().describe('null when no run of the period reported a cost.'),
    runs: z.int(),
    limit: Limit.nullable().describe('The budget of this scope and period, if one is set.'),
    percent: z.number().nullable(),
  })
  .meta({ id: 'UsagePeriodSpend' });
const Period = z.object({ start: Timestamp, end: Timestamp }).meta({ id: 'UsagePeriod' });

export const UsagePeriodsOut = z.object({
  timeZone: z.string(),
  periods: z.object({ day: Period, week: Period, month: Period }),
  rows: z
    .array(z.object({ agent: z.string().nullable().describe('null: the whole project.'), day: PeriodSpend, week: PeriodSpend, month: PeriodSpend }))
    .describe('One row per agent with runs in one of the periods or a budget, then the project.'),
});
