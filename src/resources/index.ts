import type { AppResource, ResourceServer } from '../app.js';
import { eventsResource } from '../events/resource.js';
import { toolsResource } from '../tools/resource.js';
import { agentsResource } from './agents/resource.js';
import { approvalsResource } from './approvals/resource.js';
import { boardResource } from './board/resource.js';
import { budgetsResource } from './budgets/resource.js';
import { chatResource } from './chat/resource.js';
import { dataResource } from './data/resource.js';
import { missionsResource } from './missions/resource.js';
import { notifyResource } from './notify/resource.js';
import { playbooksResource } from './playbooks/resource.js';
import { providersResource } from './providers/resource.js';
import { routinesResource } from './routines/resource.js';
import { runsResource } from './runs/resource.js';
import { skillsResource } from './skills/resource.js';
import { systemResource } from './system/resource.js';
import { tasksResource } from './tasks/resource.js';
import { teamsResource } from './teams/resource.js';
import { vaultResource } from './vault/resource.js';
import { webhooksResource } from './webhooks/resource.js';

// Every resource of svc, once (docs/architecture.md). A resource not listed here does not exist:
// its routes, commands, tables, migrations and parts are all reached from its descriptor.
//
// The order is the API's: the OpenAPI document lists the routes in it. Commands are listed in it
// too, tables are copied in it (parents first), and the daemon wires the resources and starts
// their background parts in it (closing them in reverse).

export const RESOURCES: readonly AppResource[] = [
  systemResource,
  eventsResource,
  teamsResource,
  agentsResource,
  tasksResource,
  runsResource,
  budgetsResource,
  missionsResource,
  playbooksResource,
  routinesResource,
  skillsResource,
  vaultResource,
  approvalsResource,
  webhooksResource,
  toolsResource,
  dataResource,
  providersResource,
  chatResource,
  boardResource,
  notifyResource,
];

/** A resource with what the daemon runs for it. */
export interface LoadedResource {
  resource: AppResource;
  server: ResourceServer;
}

let loaded: Promise<LoadedResource[]> | undefined;

/** Every resource's server, in the list's order (loaded once per process: they are plain data). */
export function loadResources(): Promise<LoadedResource[]> {
  loaded ??= Promise.all(RESOURCES.map(async (resource) => ({ resource, server: resource.server ? await resource.server() : {} })));
  return loaded;
}
