import type { AppResource } from '../../app.js';
import { migration as m020 } from './migrations/020-routines.js';

export const routinesResource: AppResource = {
  name: 'routines',
  commands: [{ name: 'routines', summary: 'Work that starts by itself: on a cron schedule or when an event happens', load: async () => (await import('./command.js')).routinesCommand() }],
  events: ['routine'],
  tables: ['routines', 'routine_firings', 'routine_work'],
  migrations: [m020],
  server: async () => (await import('./server.js')).server,
};
