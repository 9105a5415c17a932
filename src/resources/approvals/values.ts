// The values of this resource's enums, apart from its zod schemas: the CLI offers them as choices
// without loading zod (a client command's start-up budget is a few times `node -e 0`).

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected'] as const;
export const TIMEOUT_ACTIONS = ['approve', 'reject'] as const;
/** task: a gate that holds its task in awaiting_approval; permission: a tool use a run's CLI asks about. */
export const APPROVAL_KINDS = ['task', 'permission'] as const;

/** The longest approval timeout: a year. */
export const MAX_TIMEOUT_SECONDS = 365 * 24 * 60 * 60;
