import type { ResourceServer } from '../../app.js';
import { needsNobody, raiseAttention } from './attention.js';

export const server: ResourceServer = {
  // attention:needed after an event that means a person is needed, in that event's transaction
  // (attention.ts says why); its webhook deliveries come the same way.
  sink: raiseAttention,
  quiet: needsNobody,
};
