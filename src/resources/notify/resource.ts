import type { AppResource } from '../../app.js';

export const notifyResource: AppResource = {
  name: 'notify',
  commands: [
    { name: 'notify', summary: 'Desktop notifications when a run needs you (attention:needed): run, install as a service, test', load: async () => (await import('./command.js')).notifyCommand() },
  ],
  events: ['attention'],
  server: async () => (await import('./server.js')).server,
};
