import { z } from 'zod';

// The one event registry. SSE frames, the public catalog and docs/events.md all come from these
// definitions; an event not defined here cannot be emitted. Only events the daemon really emits
// are listed (a check at the end of `npm test` fails when one was never emitted by any test): a
// feature adds its events here together with the code and the test that emit them.

const taskState = z.enum(['draft', 'pending', 'assigned', 'in_progress', 'review', 'awaiting_approval', 'done', 'failed']);
const missionRef = { missionId: z.string(), name: z.string() };
const runReasons = ['dispatch', 'manual', 'retry', 'revision', 'requeue'] as const;
const budgetData = {
  scope: z.enum(['project', 'agent']),
  agent: z.string().nullable().describe('The agent of an agent budget; null for the project.'),
  period: z.enum(['day', 'week', 'month']),
  periodStart: z.string(),
  periodEnd: z.string(),
  spent: z.object({ tokens: z.int(), costUsd: z.number() }),
  limit: z.object({ tokens: z.int().nullable(), costUsd: z.number().nullable() }),
  percent: z.number().describe('Of the limit spent (the higher of tokens and cost when both are limited).'),
};

interface EventDef {
  description: string;
  data: z.ZodObject;
}

interface CategoryDef {
  description: string;
  events: Record<string, EventDef>;
}

function ev(description: string, shape: z.ZodRawShape): EventDef {
  // Loose objects: consumers must accept fields added later, and producers may add fields after
  // the documented ones (task:transition's data is {taskId, from, to} plus anything extra).
  return { description, data: z.looseObject(shape) };
}

export const CATEGORIES = {
  task: {
    description: 'The task board: creation, edits, state changes and claims.',
    events: {
      created: ev('A task was created.', { taskId: z.string(), title: z.string(), status: taskState, assignTo: z.string().nullable(), missionId: z.string().nullable() }),
      updated: ev('Fields of a task other than its state were changed.', { taskId: z.string(), fields: z.array(z.string()) }),
      transition: ev('A task changed state, whoever caused it.', { taskId: z.string(), from: taskState, to: taskState, reason: z.string().optional() }),
      removed: ev('A task was deleted.', { taskId: z.string() }),
      claimed: ev('An agent claimed a task and started it.', { taskId: z.string(), agent: z.string() }),
      lease_expired: ev('A claim ran out with no heartbeat: the task went back to pending with no assignee (a task:transition fires with it).', {
        taskId: z.string(),
        agent: z.string().nullable().describe('The holder whose lease ran out.'),
        leaseId: z.string(),
        expiredAt: z.string(),
      }),
      commented: ev('A note was added to a task activity.', { taskId: z.string(), commentId: z.string(), author: z.string() }),
    },
  },
  mission: {
    description: 'Missions: plans of tasks and their lifecycle.',
    events: {
      created: ev('A mission and its tasks were created.', { ...missionRef, taskIds: z.array(z.string()) }),
      started: ev('A mission started: its draft tasks became pending.', missionRef),
      paused: ev('A mission was paused.', missionRef),
      resumed: ev('A paused mission was resumed.', missionRef),
      completed: ev('Every task of a mission is done.', missionRef),
      failed: ev('A task of the mission failed with no retries left.', { ...missionRef, taskId: z.string().optional() }),
      cancelled: ev('A mission was cancelled.', missionRef),
      deleted: ev('A mission was deleted (with its tasks when cascade was asked).', { ...missionRef, cascade: z.boolean() }),
    },
  },
  approval: {
    description: 'Human approvals that gate work, and the permissions runs ask for.',
    events: {
      requested: ev('An approval was requested: a task gate, or a permission a run asks for (kind "permission", with its run, agent and tool).', {
        approvalId: z.string(),
        kind: z.enum(['task', 'permission']),
        taskId: z.string().nullable(),
        missionId: z.string().nullable(),
        title: z.string(),
        requestedBy: z.string(),
        runId: z.string().nullable().describe('A permission request: the run that asks.'),
        tool: z.string().nullable().describe('A permission request: the tool it asks to use.'),
      }),
      resolved: ev('An approval was approved, rejected or timed out.', {
        approvalId: z.string(),
        kind: z.enum(['task', 'permission']),
        taskId: z.string().nullable(),
        runId: z.string().nullable(),
        status: z.enum(['approved', 'rejected']),
        resolvedBy: z.string().nullable(),
        timedOut: z.boolean(),
        alwaysAllowed: z.string().nullable().describe("The tool an approval with alwaysAllow added to the agent's allowedTools."),
      }),
    },
  },
  agent: {
    description: 'Agents: their creation, configuration and removal.',
    events: {
      created: ev('An agent was created.', { name: z.string() }),
      updated: ev('An agent was updated; `fields` names what changed.', { name: z.string(), fields: z.array(z.string()) }),
      removed: ev('An agent was removed.', { name: z.string() }),
    },
  },
  team: {
    description: 'Teams of agents.',
    events: {
      created: ev('A team was created.', { name: z.string() }),
      renamed: ev('A team was renamed; its agents followed.', { oldName: z.string(), name: z.string() }),
      removed: ev('A team was removed.', { name: z.string() }),
    },
  },
  skill: {
    description: 'Skills (SKILL.md folders) and their assignment to agents.',
    events: {
      created: ev('A skill appeared or was written.', { name: z.string() }),
      removed: ev('A skill was removed.', { name: z.string() }),
      assigned: ev('A skill was assigned to an agent.', { skill: z.string(), agent: z.string() }),
      unassigned: ev('A skill was unassigned from an agent.', { skill: z.string(), agent: z.string() }),
    },
  },
  vault: {
    description: 'Per-agent credentials. Events never carry credential values.',
    events: {
      saved: ev('A credential entry was created or replaced.', { agent: z.string(), service: z.string(), type: z.string(), keys: z.array(z.string()) }),
      removed: ev('A credential entry was removed.', { agent: z.string(), service: z.string() }),
    },
  },
  webhook: {
    description: 'Webhook endpoints.',
    events: {
      disabled: ev('A webhook was disabled because its endpoint answered 410 Gone.', { webhookId: z.string(), url: z.string(), reason: z.string() }),
      test: ev('A test event sent with POST /v1/webhooks/{id}/test; delivered to that webhook only.', { webhookId: z.string() }),
    },
  },
  data: {
    description: 'Application databases.',
    events: {
      created: ev('A database was created.', { id: z.string(), name: z.string() }),
      deleted: ev('A database was deleted (its file is removed).', { id: z.string(), name: z.string() }),
      migrated: ev('A migration was applied to a database.', { id: z.string(), name: z.string(), migrationId: z.string(), schemaVersion: z.int() }),
    },
  },
  completion: {
    description: 'Chat completions through /v1/chat/completions.',
    events: {
      finished: ev('A chat completion finished.', {
        sessionId: z.string().nullable(),
        agent: z.string().nullable(),
        model: z.string(),
        finishReason: z.string().nullable(),
        usage: z.looseObject({ prompt_tokens: z.int().optional(), completion_tokens: z.int().optional(), total_tokens: z.int().optional() }).nullable(),
        durationMs: z.number(),
      }),
    },
  },
  session: {
    description: 'Chat sessions.',
    events: {
      started: ev("A chat session was started (a call without a session id, or with a new one: x-session-id, or Codex's thread-id on /v1/responses).", {
        sessionId: z.string(),
        agent: z.string().nullable(),
        model: z.string(),
      }),
    },
  },
  run: {
    description: "Runs: svc starting an agent's CLI on a task, its live log and how it ended (docs/runs.md).",
    events: {
      queued: ev('A run was queued for a task; it starts when the agent, the project and a runner have a free slot.', {
        runId: z.string(),
        taskId: z.string(),
        agent: z.string(),
        attempt: z.int(),
        reason: z.enum(runReasons).describe('dispatch: the task became ready; manual: POST /tasks/{id}/runs; retry: the last run failed; revision: review feedback; requeue: a run was lost.'),
      }),
      started: ev("A run's CLI process was started in its workspace.", {
        runId: z.string(),
        taskId: z.string(),
        agent: z.string(),
        runner: z.string(),
        pid: z.int(),
        branch: z.string().nullable(),
      }),
      activity: ev(
        "New items of a run's log (at most one event per run every 100 ms, items cut to 2 KiB; the whole log is GET /api/v1/runs/{runId}/log). Leave them out with an SSE filter such as `task:,run:started,run:finished`.",
        {
          runId: z.string(),
          taskId: z.string(),
          agent: z.string(),
          fromSeq: z.int(),
          items: z.array(z.looseObject({ seq: z.int(), kind: z.string() })),
          turns: z.int().optional().describe("The run's turns so far, once its CLI has reported any (as the run's own field)."),
          usage: z
            .object({ inputTokens: z.int(), outputTokens: z.int(), cacheReadTokens: z.int(), cacheWriteTokens: z.int(), costUsd: z.number().nullable() })
            .optional()
            .describe("The run's tokens and cost so far, as the run's own usage field (a live view needs no read of the run)."),
        },
      ),
      paused: ev(
        "A run stopped before its work was done and waits to resume its CLI's session: its provider's usage limit (until the reset, or the provider's backoff) or a budget (until the period rolls over or the limit is raised). Its task goes back to assigned; no retry is counted.",
        {
          runId: z.string(),
          taskId: z.string(),
          agent: z.string(),
          reason: z.enum(['usage_limit', 'budget']),
          provider: z.string().nullable().describe("The agent's provider (from its model, else its runtime), or null when it has none."),
          until: z.string().nullable().describe("When it resumes by itself (runner.autoResume), as far as known now: the usage limit's reset, or the budget period's end."),
        },
      ),
      resumed: ev('A paused run was queued again to resume its session: by the runner once nothing held it any more, or by a person (POST /api/v1/runs/{runId}/resume).', {
        runId: z.string(),
        taskId: z.string(),
        agent: z.string(),
        by: z.enum(['runner', 'person']),
      }),
      finished: ev('A run ended: succeeded, failed, cancelled, timed_out or lost.', {
        runId: z.string(),
        taskId: z.string(),
        agent: z.string(),
        status: z.enum(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']),
        exitCode: z.int().nullable(),
        error: z.string().nullable(),
        headCommit: z.string().nullable(),
        usage: z.object({ inputTokens: z.int(), outputTokens: z.int(), cacheReadTokens: z.int(), cacheWriteTokens: z.int(), costUsd: z.number().nullable() }),
      }),
    },
  },
  runner: {
    description:
      "Runners: the daemons that run agents (online and offline are said when several share a PostgreSQL state: a daemon alone on SQLite is its only runner), and pauses of a provider's runs.",
    events: {
      paused: ev(
        "An agent's CLI ran into its provider's usage limit: every run of agents on that provider waits until `until` (the limit's reset, or the provider's backoff when the CLI gave none).",
        {
          provider: z.string(),
          until: z.string(),
          runs: z.int().describe('Runs waiting for it now (queued, and paused by the limit).'),
        },
      ),
      resumed: ev(
        "A provider's pause is over (its reset came, or a person resumed a run of it): its queued runs start again, and its paused runs resume their sessions when runner.autoResume is on.",
        {
          provider: z.string(),
          runs: z.int().describe('Runs of agents on the provider waiting to start or resume.'),
          by: z.enum(['runner', 'person']),
        },
      ),
      online: ev('A runner started: it runs agents whose runtimes it found.', { runnerId: z.string(), host: z.string(), runtimes: z.array(z.string()) }),
      offline: ev('A runner stopped (a clean stop) or was not seen for too long (its runs are lost and queued again elsewhere).', {
        runnerId: z.string(),
        host: z.string(),
        reason: z.enum(['stopped', 'unresponsive']),
        lostRuns: z.array(z.string()),
      }),
    },
  },
  attention: {
    description: 'What needs a person, whatever the cause: the one event to route to a phone, a chat or the desktop (`svc notify`; docs/notifications.md).',
    events: {
      needed: ev(
        'A run or a task waits for a person: an approval (a permission one among them) to decide, a budget stop, a paused provider, or a task that failed with no retries left. Written in the same transaction as the event it follows (`source`), so it is never lost nor written twice.',
        {
          reason: z
            .enum(['permission', 'approval', 'budget', 'paused', 'failed'])
            .describe(
              'permission: a run asks leave to use a tool (approval:requested of kind permission); approval: any other approval:requested; budget: budget:exceeded; paused: runner:paused; failed: task:transition to failed with no retries left.',
            ),
          title: z.string().describe('One short line, a notification title.'),
          message: z.string().describe('One line more: who asks, the error, and the command that shows it.'),
          taskId: z.string().nullable(),
          runId: z.string().nullable(),
          agent: z.string().nullable(),
          approvalId: z.string().nullable(),
          link: z.string().nullable().describe("The board's page for it, a path on the daemon's URL (`/#/runs/<id>`, `/#/tasks/<id>`, `/#/approvals`)."),
          source: z.object({ event: z.string(), id: z.int() }).describe('The event this one follows: its name and id.'),
          detail: z.record(z.string(), z.unknown()).describe("That event's data, as it was written."),
        },
      ),
    },
  },
  budget: {
    description: 'Budgets of tokens or cost per agent and for the project, per day, week or month (docs/runs.md, Budgets).',
    events: {
      warning: ev('A budget is 80 % spent in its period (said once per budget and period).', budgetData),
      exceeded: ev(
        'A budget is spent in its period (said once per budget and period): new runs of its scope wait until the period rolls over or the limit is raised, and live ones stop after their current turn.',
        budgetData,
      ),
      updated: ev("Budgets were set through the API (PUT /api/v1/budgets); they apply instead of project.json's until its budgets change.", {
        limits: z.int().describe('How many budgets are set now.'),
      }),
    },
  },
  routine: {
    description: 'Routines: work that starts by itself on a schedule or when an event happens (docs/routines.md).',
    events: {
      created: ev('A routine was created.', { routine: z.string() }),
      updated: ev('A routine was changed; `fields` names what changed.', { routine: z.string(), fields: z.array(z.string()) }),
      removed: ev('A routine was deleted, with its firings.', { routine: z.string() }),
      fired: ev('A routine fired: its action ran and created work, in the transaction that recorded the firing.', {
        routine: z.string(),
        firingId: z.string(),
        reason: z.enum(['schedule', 'catch_up', 'event', 'manual']),
        scheduledAt: z.string().nullable(),
        eventId: z.int().nullable(),
        taskIds: z.array(z.string()),
        missionId: z.string().nullable(),
        chain: z.array(z.string()).describe('The routines whose firings led here, this one last (the depth limit counts them).'),
      }),
      queued: ev('A firing waits for the previous firing\'s work to close (concurrency "queue").', { routine: z.string(), firingId: z.string(), chain: z.array(z.string()) }),
      skipped: ev(
        'A routine did not fire, and why: its previous work still open (concurrency skip), firings missed while no daemon ran (catchUp none), the per-minute bound (rate), a full queue. A firing stopped by the depth limit is recorded in its history without an event (an event would go on the chain).',
        {
          routine: z.string(),
          firingId: z.string(),
          why: z.enum(['concurrency', 'missed', 'rate', 'queue_full']),
          detail: z.string(),
          chain: z.array(z.string()),
        },
      ),
      failed: ev('A routine fired but its action was refused (a playbook or agent gone, a filled template that is not valid); nothing was created.', {
        routine: z.string(),
        firingId: z.string(),
        error: z.string(),
        chain: z.array(z.string()),
      }),
    },
  },
  config: {
    description: 'project.json reloads.',
    events: {
      reloaded: ev('A valid project.json change was applied.', { warnings: z.array(z.string()) }),
      invalid: ev('A project.json change was refused; the last good config stays in force.', { issues: z.array(z.object({ path: z.string(), message: z.string() })) }),
    },
  },
} as const satisfies Record<string, CategoryDef>;

type Categories = typeof CATEGORIES;
type Names<C extends keyof Categories> = C extends string ? `${C}:${Extract<keyof Categories[C]['events'], string>}` : never;
export type EventName = Names<keyof Categories>;

type DefOf<N extends EventName> = N extends `${infer C}:${infer A}` ? (C extends keyof Categories ? (A extends keyof Categories[C]['events'] ? Categories[C]['events'][A] : never) : never) : never;

export type EventData<N extends EventName> = DefOf<N> extends { data: infer S extends z.ZodType } ? z.input<S> : never;

export const EVENT_NAMES: EventName[] = Object.entries(CATEGORIES).flatMap(([c, def]) => Object.keys(def.events).map((a) => `${c}:${a}` as EventName));

// Names come from clients (SSE filters), so they are looked up in Maps: `constructor:created` or
// `__proto__` must find nothing rather than something inherited from Object.prototype.
const DEFS = new Map<string, EventDef>(Object.entries(CATEGORIES as Record<string, CategoryDef>).flatMap(([c, def]) => Object.entries(def.events).map(([a, e]) => [`${c}:${a}`, e] as const)));
const CATEGORY_NAMES: ReadonlySet<string> = new Set(Object.keys(CATEGORIES));

export function eventDef(name: string): EventDef | undefined {
  return DEFS.get(name);
}

export function isCategory(name: string): boolean {
  return CATEGORY_NAMES.has(name);
}

export function isEventName(name: string): name is EventName {
  return eventDef(name) !== undefined;
}

export interface CatalogCategory {
  category: string;
  description: string;
  events: { name: string; description: string; dataSchema: Record<string, unknown> }[];
}

/** The public catalog: every event with its description and the JSON Schema of its data. */
export function catalog(): CatalogCategory[] {
  return Object.entries(CATEGORIES).map(([category, def]) => ({
    category,
    description: def.description,
    events: Object.entries(def.events as Record<string, EventDef>).map(([action, e]) => {
      const dataSchema = z.toJSONSchema(e.data, { target: 'draft-2020-12', io: 'output' }) as Record<string, unknown>;
      delete dataSchema.$schema;
      return { name: `${category}:${action}`, description: e.description, dataSchema };
    }),
  }));
}
