import { z } from 'zod';
import { BUDGET_PERIODS, isTimeZone } from '../lib/periods.js';

// project.json's `budgets` (docs/runs.md, Budgets). Here, below the resources, because the project's
// schema (schema.ts) holds it; the budgets resource takes the same schema for PUT /api/v1/budgets.

export const BudgetLimit = z
  .strictObject({
    agent: z.string().min(1).max(64).optional().describe('The agent it limits; absent: the whole project (every agent together).'),
    period: z.enum(BUDGET_PERIODS).describe('day, week (from Monday) or month, in timeZone.'),
    tokens: z.int('tokens is a whole number of tokens').min(0, 'a budget cannot be negative').max(1e15).optional().describe('Tokens at most (input, cached and output together).'),
    costUsd: z.number().min(0, 'a budget cannot be negative').max(1e9).optional().describe('USD at most, as the CLIs report cost (Claude Code does; Codex does not, so its runs count tokens only).'),
  })
  .superRefine((b, ctx) => {
    if (b.tokens === undefined && b.costUsd === undefined) ctx.addIssue({ code: 'custom', path: [], message: 'a budget needs a limit: give tokens, costUsd or both' });
  });
export type BudgetLimit = z.output<typeof BudgetLimit>;

/** project.json's `budgets` (without a name: the configuration page lists its fields). */
export const BudgetsConfig = z
  .strictObject({
    timeZone: z
      .string()
      .min(1)
      .max(64)
      .refine(isTimeZone, 'not a time zone: give an IANA name such as Europe/Paris, or UTC')
      .default('UTC')
      .describe('Where days, weeks and months begin: an IANA time zone name.'),
    limits: z.array(BudgetLimit).max(256).default([]).describe('The budgets: per agent (agent) or for the project (no agent), per period.'),
  })
  .superRefine((b, ctx) => {
    const seen = new Map<string, number>();
    b.limits.forEach((l, i) => {
      const key = `${l.agent ?? ''}\0${l.period}`;
      const first = seen.get(key);
      if (first !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['limits', i],
          message: `a second ${l.period} budget for ${l.agent ? `agent ${l.agent}` : 'the project'} (the first is limits.${first}): put both limits in one`,
        });
      else seen.set(key, i);
    });
  });
