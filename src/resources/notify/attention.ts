import type { App } from '../../app.js';
import { shortId } from '../../lib/human.js';
import type { StoredEvent } from '../../events/outbox.js';
import type { EventData } from '../../events/registry.js';
import { cutText } from '../runs/drivers/bounds.js';
import type { Task } from '../tasks/schema.js';
import { getTask } from '../tasks/service.js';

// attention:needed, the one event a person routes: it follows the events that mean a run or a task
// waits for someone. It is written from the event log's sink (this resource's server.ts), inside the transaction
// of the event it follows, rather than by a listener after that commit: the two commit together or
// not at all, so a crash between them cannot lose it, a rolled-back change never raises it, and on
// a state shared by several daemons only the writer raises it (every daemon hears every commit).
// The task a failure concerns is read in that same transaction, as the move left it.

export type Attention = EventData<'attention:needed'>;

/** What the mapping reads of a task. */
export type TaskLookup = (id: string) => Pick<Task, 'title' | 'retries' | 'maxRetries' | 'assignTo' | 'result'> | null;

/** Texts are bounded here (a task's error can be long); a notifier shortens them further. */
const TEXT_MAX = 1_000;

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** "bob's day budget is spent (120 %); its runs wait until 2030-01-02T00:00:00.000Z" from budget:exceeded's data. */
function budgetMessage(d: Record<string, unknown>): string | null {
  const period = str(d.period);
  if (!period) return null;
  const who = str(d.agent) ? `${str(d.agent)}'s` : "the project's";
  const percent = typeof d.percent === 'number' ? ` (${Math.round(d.percent)} %)` : '';
  const end = str(d.periodEnd);
  return `${who} ${period} budget is spent${percent}; its runs wait${end ? ` until ${end}` : ''} or a higher limit (svc budgets)`;
}

/** A source whose shape is not fixed here: its scalar fields, `k=v` (budget:exceeded, runner:paused). */
function fields(data: Record<string, unknown>): string {
  return Object.entries(data)
    .filter(([, v]) => v !== null && ['string', 'number', 'boolean'].includes(typeof v))
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(', ');
}

/** Where the board shows it: the run, else the task. */
const linkTo = (runId: string | null, taskId: string | null): string | null => (runId ? `/#/runs/${runId}` : taskId ? `/#/tasks/${taskId}` : null);

/**
 * The attention:needed that `e` calls for, or null. Names are matched as strings: budget:exceeded
 * and runner:paused come from other resources, and their data is copied through as it is.
 */
export function attentionOf(e: Pick<StoredEvent, 'id' | 'data'> & { name: string }, taskOf: TaskLookup): Attention | null {
  const d = e.data;
  const base = { source: { event: e.name, id: e.id }, detail: d };
  switch (e.name) {
    case 'approval:requested': {
      const approvalId = str(d.approvalId);
      const taskId = str(d.taskId);
      const permission = d.kind === 'permission';
      return {
        reason: permission ? 'permission' : 'approval',
        title: cutText(`${permission ? 'Permission' : 'Approval'} needed: ${str(d.title) ?? 'a request'}`, TEXT_MAX),
        message: cutText(`asked by ${str(d.requestedBy) ?? 'someone'} · svc approvals show ${shortId(approvalId) ?? '?'}`, TEXT_MAX),
        taskId,
        runId: str(d.runId),
        // A permission request is asked by its run's agent.
        agent: str(d.agent) ?? (permission ? str(d.requestedBy) : null),
        approvalId,
        link: '/#/approvals',
        ...base,
      };
    }
    case 'task:transition': {
      const taskId = str(d.taskId);
      if (d.to !== 'failed' || !taskId) return null;
      const task = taskOf(taskId);
      // With retries left the runner tries again (or a person may): nobody is needed yet.
      if (!task || task.retries < task.maxRetries) return null;
      const result = task.result !== null && typeof task.result === 'object' ? (task.result as Record<string, unknown>) : {};
      const runId = str(result.runId);
      const error = str(result.error) ?? str(d.reason) ?? 'no reason given';
      return {
        reason: 'failed',
        title: cutText(`Task failed: ${task.title}`, TEXT_MAX),
        message: cutText(`${error} · no retries left (${task.retries} of ${task.maxRetries}) · svc tasks show ${shortId(taskId)}`, TEXT_MAX),
        taskId,
        runId,
        agent: task.assignTo,
        approvalId: null,
        link: linkTo(runId, taskId),
        ...base,
      };
    }
    case 'budget:exceeded': {
      const taskId = str(d.taskId);
      const runId = str(d.runId);
      const agent = str(d.agent);
      return {
        reason: 'budget',
        title: cutText(`Budget reached${agent ? `: ${agent}` : ''}`, TEXT_MAX),
        message: cutText(budgetMessage(d) ?? fields(d), TEXT_MAX),
        taskId,
        runId,
        agent,
        approvalId: null,
        link: linkTo(runId, taskId),
        ...base,
      };
    }
    case 'runner:paused': {
      const provider = str(d.provider);
      const runs = Array.isArray(d.runs) ? d.runs.length : typeof d.runs === 'number' ? d.runs : null;
      const until = str(d.until);
      return {
        reason: 'paused',
        title: cutText(`Runs paused${provider ? `: ${provider}` : ''}`, TEXT_MAX),
        message: cutText([until ? `until ${until}` : null, runs !== null ? `${runs} run${runs === 1 ? '' : 's'} waiting` : null].filter(Boolean).join(' · ') || fields(d), TEXT_MAX),
        taskId: str(d.taskId),
        runId: str(d.runId),
        agent: str(d.agent),
        approvalId: null,
        link: null,
        ...base,
      };
    }
  }
  return null;
}

/** A task with no retries left: what makes a failure need a person. */
const SPENT: ReturnType<TaskLookup> = { title: '', retries: 0, maxRetries: 0, assignTo: null, result: null };

/**
 * raiseAttention has nothing to do for `e` (the event log's quiet, notify's server.ts): no
 * attention:needed follows it even if the task it names had no retries left.
 */
export function needsNobody(_app: App, e: StoredEvent): boolean {
  return attentionOf(e, () => SPENT) === null;
}

/** The event log's sink calls this for every event it writes, inside that event's transaction. */
export async function raiseAttention(app: App, e: StoredEvent): Promise<void> {
  // The one task a failure concerns, read here in the event's transaction, as the move left it.
  const failed = e.name === 'task:transition' && e.data.to === 'failed' && typeof e.data.taskId === 'string' ? e.data.taskId : null;
  const task = failed ? await getTask(app, failed) : null;
  const a = attentionOf(e, (id) => (id === failed ? task : null));
  if (a) app.events.emit('attention:needed', a);
}
