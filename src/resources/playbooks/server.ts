import type { ResourceServer } from '../../app.js';
import { playbookRoutes } from './routes.js';
import { Parameter } from './schema.js';

export const server: ResourceServer = { routes: playbookRoutes, schemaNames: { PlaybookParameter: Parameter } };
