import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { App } from '../../app.js';
import { getMission } from '../missions/service.js';
import { fill, placeholders } from '../playbooks/template.js';
import { taskWithComments } from '../tasks/comments.js';
import type { Task } from '../tasks/schema.js';
import { getTask } from '../tasks/service.js';
import type { PauseReason } from './schema.js';
import * as store from './store.js';

// What a run tells the agent's CLI: the task, its mission's goal, what its dependencies left,
// feedback from review, and how to report back. Built in, or a template in the repository
// (runner.promptFile, versioned with the code) filled with the playbook template engine's
// {{placeholders}}: the names below, flat, as that engine takes them.

export interface PromptFacts {
  agent: string;
  runId: string;
  task: { id: string; title: string; description: string | null };
  mission: { name: string; goal: string | null } | null;
  /** Dependencies with what their last run left (summary, branch). */
  dependencies: { id: string; title: string; summary: string | null; branch: string | null }[];
  /** The feedback of the review that sent the task back (a revision), or null. */
  feedback: string | null;
  /** What a person asked for by hand (POST /tasks/{id}/runs {prompt}), or null. */
  request: string | null;
  /** The branch the work is committed to, or null when the project is not a git repository. */
  branch: string | null;
  /** The run was paused (why) and resumes its session now, or null. */
  resumed: PauseReason | null;
  /** What happened on the task so far (its earlier runs, its notes), when the CLI's session was lost; else null. */
  history: string | null;
}

const PAUSED_BY: Record<PauseReason, string> = { usage_limit: "a usage limit of the model's provider", budget: 'its budget' };

/** Notes and runs of a task's history, and each one's text, at most this many (the newest). */
const HISTORY_ITEMS = 20;
const HISTORY_TEXT_MAX = 1000;
const clip = (t: string): string => (t.length <= HISTORY_TEXT_MAX ? t : `${t.slice(0, HISTORY_TEXT_MAX)}…`);

/**
 * What happened on a task so far, for a CLI that starts afresh because the session it was to
 * resume is lost: its earlier runs (how each ended, its summary or error) and its notes, oldest first.
 */
export async function taskHistory(app: App, taskId: string, exceptRunId: string): Promise<string> {
  const runs = (await store.listRuns(app.db, { taskId, limit: HISTORY_ITEMS + 1 })).filter((r) => r.id !== exceptRunId).reverse();
  const { comments } = await taskWithComments(app, taskId, HISTORY_ITEMS);
  const lines = [
    ...runs.map((r) => `- run ${r.attempt} (${r.reason}, ${r.status}${r.branch ? `, branch ${r.branch}` : ''})${r.summary ? `: ${clip(r.summary)}` : r.error ? `: ${clip(r.error)}` : ''}`),
    ...comments.reverse().map((c) => `- note by ${c.author} at ${c.createdAt}: ${clip(c.body)}`),
  ];
  return lines.length ? lines.join('\n') : 'Nothing was recorded before this run.';
}

const REPORT = (f: PromptFacts) =>
  [
    f.branch
      ? `You work in a git worktree of the project on branch ${f.branch}. When you finish, svc commits what you changed there for you: do not push, and do not switch branches.`
      : 'You work in the project folder itself (it is not a git repository).',
    `svc's MCP server ("svc") is connected: task_get {"taskId": "${f.task.id}", "withNotes": true} reads this task and its notes, task_comment adds a note (use it for progress a person should see).`,
    "Do not change this task's state yourself: when you exit, svc moves it to review with your final message as the summary, or to failed if you exit with an error.",
    'End with a short summary of what you did and anything left undone.',
  ].join('\n');

/** The placeholders a runner.promptFile may use. */
export function promptValues(f: PromptFacts): Record<string, string> {
  return {
    agent: f.agent,
    run_id: f.runId,
    task_id: f.task.id,
    task_title: f.task.title,
    task_description: f.task.description ?? '',
    mission_name: f.mission?.name ?? '',
    mission_goal: f.mission?.goal ?? '',
    dependencies: f.dependencies.map((d) => `- ${d.title} (${d.id})${d.branch ? ` on branch ${d.branch}` : ''}${d.summary ? `: ${d.summary}` : ''}`).join('\n'),
    feedback: f.feedback ?? '',
    request: f.request ?? '',
    branch: f.branch ?? '',
    resumed: f.resumed ? `This run was paused by ${PAUSED_BY[f.resumed]} and now resumes: continue the work where you left off.` : '',
    history: f.history ?? '',
    report: REPORT(f),
  };
}

/** The built-in prompt. */
export function builtInPrompt(f: PromptFacts): string {
  const parts: string[] = [`# Task: ${f.task.title}`, `(task ${f.task.id}, assigned to you, ${f.agent}, by svc)`];
  if (f.resumed) parts.push(`## Resuming\n${promptValues(f).resumed}`);
  if (f.task.description) parts.push(f.task.description);
  if (f.request) parts.push(`## What is asked of this run\n${f.request}`);
  if (f.mission) parts.push(`## Mission: ${f.mission.name}${f.mission.goal ? `\n${f.mission.goal}` : ''}`);
  if (f.dependencies.length) parts.push(`## Work this task builds on\n${promptValues(f).dependencies}`);
  if (f.feedback) parts.push(`## Review feedback on your last attempt\nA reviewer sent this task back. Address this:\n${f.feedback}`);
  if (f.history)
    parts.push(`## What happened so far\nYour earlier session on this task could not be resumed. Its runs and notes, oldest first (the work they committed is on your branch):\n${f.history}`);
  parts.push(`## How to work and report\n${REPORT(f)}`);
  return parts.join('\n\n');
}

/** The prompt from a template (runner.promptFile): unknown placeholders become empty text. */
export function templatePrompt(template: string, f: PromptFacts): string {
  return String(fill(template, promptValues(f)) ?? '');
}

/**
 * The prompt of a run: built in, or from runner.promptFile (read at each run, so an edit in the
 * repository applies to the next one). Throws with what is wrong with the template (unreadable,
 * or a placeholder svc does not fill): the run fails with that message.
 */
export async function promptFor(app: App, run: store.RunRecord, task: Task, branch: string | null, promptFile: string | undefined, extra: { history?: string } = {}): Promise<string> {
  let mission: PromptFacts['mission'] = null;
  if (task.missionId) {
    try {
      const m = await getMission(app, task.missionId);
      mission = { name: m.name, goal: m.goal };
    } catch {
      mission = null; // removed since: the task is still worth doing
    }
  }
  const facts: PromptFacts = {
    agent: run.agent,
    runId: run.id,
    task: { id: task.id, title: task.title, description: task.description },
    mission,
    dependencies: await dependencyFacts(app, task.dependsOn),
    feedback: run.reason === 'revision' ? run.prompt : null,
    request: run.reason === 'revision' ? null : run.prompt,
    branch,
    resumed: run.pauseReason,
    history: extra.history ?? null,
  };
  if (!promptFile) return builtInPrompt(facts);
  let template: string;
  try {
    template = readFileSync(resolve(app.root, promptFile), 'utf8');
  } catch (err) {
    throw new Error(`runner.promptFile ${promptFile} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const known = promptValues(facts);
  const unknown = placeholders(template).filter((p) => !Object.hasOwn(known, p.name));
  if (unknown.length) throw new Error(`runner.promptFile ${promptFile}: {{${unknown[0]!.name}}} is not a placeholder svc fills (it fills: ${Object.keys(known).join(', ')})`);
  return templatePrompt(template, facts);
}

/** What a run is told of each dependency: its title, and its latest run's summary and branch. */
async function dependencyFacts(app: App, ids: string[]): Promise<PromptFacts['dependencies']> {
  const out: PromptFacts['dependencies'] = [];
  for (const id of ids) {
    const last = await store.latestRunOfTask(app.db, id);
    out.push({ id, title: (await getTask(app, id))?.title ?? id, summary: last?.summary ?? null, branch: last?.branch ?? null });
  }
  return out;
}
