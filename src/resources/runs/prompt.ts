import { fill } from '../playbooks/template.js';

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
    report: REPORT(f),
  };
}

/** The built-in prompt. */
export function builtInPrompt(f: PromptFacts): string {
  const parts: string[] = [`# Task: ${f.task.title}`, `(task ${f.task.id}, assigned to you, ${f.agent}, by svc)`];
  if (f.task.description) parts.push(f.task.description);
  if (f.request) parts.push(`## What is asked of this run\n${f.request}`);
  if (f.mission) parts.push(`## Mission: ${f.mission.name}${f.mission.goal ? `\n${f.mission.goal}` : ''}`);
  if (f.dependencies.length) parts.push(`## Work this task builds on\n${promptValues(f).dependencies}`);
  if (f.feedback) parts.push(`## Review feedback on your last attempt\nA reviewer sent this task back. Address this:\n${f.feedback}`);
  parts.push(`## How to work and report\n${REPORT(f)}`);
  return parts.join('\n\n');
}

/** The prompt from a template (runner.promptFile): unknown placeholders become empty text. */
export function templatePrompt(template: string, f: PromptFacts): string {
  return String(fill(template, promptValues(f)) ?? '');
}
