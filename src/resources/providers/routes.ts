import { route } from '../../app.js';
import { AuthStatusOut } from './schema.js';
import { authStatus } from './service.js';

export const providerRoutes = [
  route({
    method: 'GET',
    path: '/api/v1/auth/status',
    operationId: 'getAuthStatus',
    summary: 'Per-provider key presence, cooldown and billing status (never a key)',
    description:
      'Built-in providers (openai, anthropic, google, xai, openrouter, mistral, groq, ollama) and those configured under `providers` in project.json. ' +
      'Transient upstream errors (429, 408, 5xx, network) of three different requests in a row put a provider in cooldown for 1 min, then 5, 25 and 60 min for each further one; ' +
      "a client's retry of a failed request, or a request that already failed on another provider, is not counted again (`errorCount` counts those that are). An upstream's own Retry-After keeps it out that long (at most 60 min). " +
      'A billing error (402, insufficient quota) disables it for 5 h × 2^(n−1), capped at 24 h; a success clears both.',
    tag: 'Providers',
    response: AuthStatusOut,
    handler: async ({ app }) => await authStatus(app),
  }),
];
