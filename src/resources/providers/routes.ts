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
      'Consecutive transient upstream errors (429, 5xx, network) put a provider in cooldown for 1, 5, 25, then 60 min; a billing error (402, insufficient quota) disables it for 5 h × 2^(n−1), capped at 24 h; a success clears both.',
    tag: 'Providers',
    response: AuthStatusOut,
    handler: ({ app }) => authStatus(app),
  }),
];
