import type { AppResource } from '../../app.js';
import { migration as m016 } from './migrations/016-board-sessions.js';

export const boardResource: AppResource = {
  name: 'board',
  commands: [
    { name: 'open', summary: 'Open the web board in the browser (a one-time login link; --logout-all signs every session out)', load: async () => (await import('./command.js')).openCommand() },
  ],
  // A move to another state signs the board out (`svc open` again).
  transientTables: ['board_logins', 'board_sessions'],
  migrations: [m016],
  server: async () => (await import('./server.js')).server,
};
