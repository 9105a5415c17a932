import type { AppResource } from '../../app.js';

// Skills are SKILL.md folders on disk, not rows: no table of their own (assignments are agents' fields).

export const skillsResource: AppResource = {
  name: 'skills',
  commands: [{ name: 'skills', summary: 'Manage skills and assign them to agents', load: async () => (await import('./command.js')).skillsCommand() }],
  events: ['skill'],
  server: async () => (await import('./server.js')).server,
};
