// The API's shapes, the same types src/client's users get from the daemon's schemas: type-only
// imports, erased from the bundle.
import type { z } from 'zod';
export type { Task } from '../../src/resources/tasks/schema.js';
export type { Mission } from '../../src/resources/missions/schema.js';
export type { Approval } from '../../src/resources/approvals/schema.js';
export type { Agent } from '../../src/resources/agents/schema.js';
export type { Team } from '../../src/resources/teams/schema.js';
import type { WebhookOut, DeliveryOut } from '../../src/resources/webhooks/schema.js';
import type { DatabaseOut, QueryOut } from '../../src/resources/data/schema.js';
import type { DiffOut, HoldOut, QueueOut } from '../../src/resources/runs/schema.js';
import type { BudgetsOut, UsagePeriodsOut } from '../../src/resources/budgets/schema.js';
export type { Run, RunStatus } from '../../src/resources/runs/schema.js';
export type { Routine, Firing } from '../../src/resources/routines/schema.js';
export type { Runtime } from '../../src/resources/agents/runtime.js';
export type { LogLineItem as LogItem } from '../../src/resources/runs/log-lines.js';

export type Webhook = z.output<typeof WebhookOut>;
export type Delivery = z.output<typeof DeliveryOut>;
export type Database = z.output<typeof DatabaseOut>;
export type QueryResult = z.output<typeof QueryOut>;
export type RunDiff = z.output<typeof DiffOut>;
export type Hold = z.output<typeof HoldOut>;
export type Queue = z.output<typeof QueueOut>;
export type QueueAgent = Queue['agents'][number];
export type UsagePeriods = z.output<typeof UsagePeriodsOut>;
export type BudgetsInForce = z.output<typeof BudgetsOut>;
export interface BoardSession {
  name: string;
  session: boolean;
  readOnly: boolean;
  lastEventId: number;
}
export interface StreamedEvent {
  id: number;
  name: string;
  data: unknown;
  /** When the board received it (ms); null for the history replayed when the page opened (the stream carries no time). */
  at: number | null;
}
