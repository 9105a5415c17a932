import type { AppResource } from '../../app.js';
import { migration as m013 } from './migrations/013-stored-responses.js';

export const chatResource: AppResource = {
  name: 'chat',
  commands: [{ name: 'chat', summary: 'Talk to an agent or the orchestrator (OpenAI-compatible, streamed)', load: async () => (await import('./command.js')).chatCommand() }],
  events: ['completion', 'session'],
  // chat_sessions: made by db/migrations/009 with the providers' health.
  tables: ['chat_sessions', 'chat_responses'],
  migrations: [m013],
  server: async () => (await import('./server.js')).server,
};
