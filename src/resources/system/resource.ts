import type { AppResource } from '../../app.js';
import { migration as m015 } from './migrations/015-daemons.js';

// The daemon itself: status, setup, shutdown; project.json reloads (config:*); the daemons present
// on a shared state. Most of its commands run the daemon or look after it.

export const systemResource: AppResource = {
  name: 'system',
  commands: [
    { name: 'init', summary: 'Write a starter project.json here', load: async () => (await import('./command.js')).initCommand() },
    { name: 'serve', summary: 'Run the daemon for this project (--detach for the background)', load: async () => (await import('./serve-command.js')).serveCommand() },
    { name: 'stop', summary: 'Stop the daemon and wait until it has exited', load: async () => (await import('./serve-command.js')).stopCommand() },
    { name: 'restart', summary: 'Stop the daemon and start it again in the background', load: async () => (await import('./serve-command.js')).restartCommand() },
    { name: 'status', summary: 'Show whether the daemon runs, and its pid, port, uptime and version', load: async () => (await import('./command.js')).statusCommand() },
    { name: 'service', summary: 'Run the daemon as a user service (systemd --user, launchd): install, uninstall, status, logs', load: async () => (await import('./service-command.js')).serviceCommand() },
    { name: 'logs', summary: "Print the daemon's log, readable (-f to follow)", load: async () => (await import('./logs-command.js')).logsCommand() },
    { name: 'state', summary: "Export the daemon's state to a file, or import one into a new state (SQLite to PostgreSQL)", load: async () => (await import('./state-command.js')).stateCommand() },
    { name: 'doctor', summary: 'Check the setup and say how to fix what is wrong', load: async () => (await import('./doctor.js')).doctorCommand() },
    { name: 'openapi', summary: "Print the daemon's OpenAPI 3.1 document", load: async () => (await import('./command.js')).openapiCommand() },
  ],
  endpoints: [{ endpoint: 'GET /api/v1/status', command: 'svc status' }],
  events: ['config'],
  transientTables: ['daemons'],
  migrations: [m015],
  server: async () => (await import('./server.js')).server,
};
