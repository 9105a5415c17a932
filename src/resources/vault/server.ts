import type { ResourceServer } from '../../app.js';
import { vaultRoutes } from './routes.js';
import { secretValues } from './service.js';

// The vault is opened by the daemon (its "vault" part): every other part may need its keys.

export const server: ResourceServer = { routes: vaultRoutes, secrets: secretValues };
