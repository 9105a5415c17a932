// The values of this resource's enums, apart from its zod schemas: the CLI offers them as choices
// without loading zod (a client command's start-up budget is a few times `node -e 0`).

export const VAULT_TYPES = ['smtp', 'imap', 'oauth', 'api_key', 'login', 'custom'] as const;
