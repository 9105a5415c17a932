import type { z } from 'zod';

/**
 * What a zod issue says, for people. A map key refused by its rule (a column or table name, a
 * provider id) is reported by zod as "Invalid key in record"; the rule it broke is in the nested
 * issues, so that is what is said.
 */
export function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_key') {
    const why = issue.issues.map((i) => i.message).filter(Boolean);
    return why.length ? `invalid name: ${why.join('; ')}` : 'invalid name';
  }
  return issue.message;
}
