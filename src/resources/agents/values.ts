// The values of this resource's enums, apart from its zod schemas: the CLI offers them as choices
// without loading zod (a client command's start-up budget is a few times `node -e 0`).

export const REASONING = ['off', 'low', 'medium', 'high'] as const;

/** The most items a list field (allowedTools…) holds. */
export const MAX_LIST_ITEMS = 1000;
