import type { Clock } from '../../lib/clock.js';
import { PERMISSION_MODES, RUNTIME_KINDS, type PermissionMode, type RuntimeKind } from '../agents/runtime.js';

// The shapes the runner's parts agree on: the drivers (one per agent CLI: how to invoke it and how
// to read its stream), the workspace (git worktrees) and the supervisor (the process). Each part is
// pure or owns one OS resource, and none of them knows the state database: the runner (runner.ts)
// joins them to runs, tasks and events. DESIGN.md section 12 is the design of record.

/** The runtime kinds and permission modes are the agent's fields (agents/runtime.ts). */
export { PERMISSION_MODES, RUNTIME_KINDS, type PermissionMode, type RuntimeKind };

/** Token counts of a run so far (running totals, never per-step deltas added up twice). */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** USD, where the CLI reports it (Claude Code does, Codex does not): null when unknown. */
  costUsd: number | null;
}

export const ZERO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null };

/**
 * One readable item of a run's log. Items are what a person reads in `svc runs logs` and the
 * board: every line of a CLI's stream maps to zero or more of them, and a line no parser
 * understands (or that is not JSON) is kept as `raw`, never dropped, never fatal.
 */
export type RunLogItem =
  /** The agent's own words (a text block of an assistant message). */
  | { kind: 'text'; text: string }
  /** Reasoning the CLI shows (Claude's thinking blocks, Codex's reasoning items). */
  | { kind: 'thinking'; text: string }
  /** A tool the agent calls, with its input (MCP tools included: tool is e.g. `mcp__svc__task_comment`). */
  | { kind: 'tool_call'; id: string | null; tool: string; input: unknown }
  /** A tool's answer. `output` is text, cut to the log's item limit. */
  | { kind: 'tool_result'; id: string | null; tool: string | null; output: string; isError: boolean }
  /** A shell command and how it ended (exitCode null while it runs or when unknown). */
  | { kind: 'command'; id: string | null; command: string; exitCode: number | null; output: string | null; durationMs: number | null }
  /** A file the agent changed (added/removed line counts when the CLI says them). */
  | { kind: 'file_change'; path: string; change: 'add' | 'update' | 'delete'; added: number | null; removed: number | null }
  /** The run's token usage so far (running totals). */
  | { kind: 'usage'; usage: Usage }
  /** A rate-limit notice from the CLI (Claude's rate_limit_event; Codex's usage-limit errors). */
  | { kind: 'rate_limit'; status: 'allowed' | 'allowed_warning' | 'rejected'; resetsAt: string | null; limitType: string | null }
  /** An error the CLI reported (an API error, a failed turn). */
  | { kind: 'error'; message: string }
  /** A line the CLI wrote to stderr. */
  | { kind: 'stderr'; text: string }
  /** Session start and other facts from the CLI (model, session id, tools) as one readable line. */
  | { kind: 'system'; text: string }
  /** A stdout line no parser understood, kept as it was (cut to the item limit). */
  | { kind: 'raw'; text: string };

export type RunLogKind = RunLogItem['kind'];

/** What the runner knows about an agent when it starts a run (from the agent record). */
export interface RunAgent {
  name: string;
  /** `provider/model` as svc stores it, or a bare model name; null: the CLI's own default. */
  model: string | null;
  systemPrompt: string | null;
  maxTurns: number | null;
  allowedTools: string[];
  allowedPaths: string[];
  reasoning: 'off' | 'low' | 'medium' | 'high' | null;
  /** Display name and email for commits and the system prompt (identity.displayName / identity.email). */
  displayName: string | null;
  email: string | null;
  /** Assigned skills: name and the folder holding its SKILL.md. */
  skills: { name: string; dir: string }[];
}

/** Everything a driver needs to build one invocation of its CLI. */
export interface RunSpec {
  runId: string;
  taskId: string;
  agent: RunAgent;
  runtime: {
    kind: RuntimeKind;
    /** The resolved executable (absolute path). */
    command: string;
    /** Extra arguments from the agent's runtime, placed where each driver documents. */
    args: string[];
    permissionMode: PermissionMode;
    /** runner.permissionTimeoutSec: how long a permission request may wait (the CLI's MCP call must outlast it). */
    permissionTimeoutSec: number;
  };
  /** The working directory: the task's worktree (or the project root when it is not a git repository). */
  cwd: string;
  prompt: string;
  /** The CLI's session to resume (a retry, a revision, a lost run started again), or null for a fresh one. */
  resumeSessionId: string | null;
  /** svc's MCP endpoint and the key minted for this run (refused once the run ends). */
  mcp: { url: string; key: string };
  /** A private folder (0700) of this run where a driver may write files it passes by path (an MCP config). */
  runDir: string;
}

/** How to start the CLI: what the supervisor spawns. */
export interface Invocation {
  command: string;
  args: string[];
  /** Added to the run's environment (the runner adds SVC_* and the agent's env on top). */
  env: Record<string, string>;
  /** Written to stdin, which is then closed (every CLI here reads its prompt from stdin). */
  stdin: string;
  /** Files the driver needs before the spawn (paths inside spec.runDir), written 0600. */
  files: { path: string; content: string }[];
}

/** A CLI's outcome as its own stream reported it; the runner combines it with the exit code. */
export interface StreamState {
  /** The CLI's session (Claude's session_id, Codex's thread_id): what a later attempt resumes. */
  sessionId: string | null;
  usage: Usage;
  /** Model turns so far (Claude's num_turns; Codex's turns started). */
  turns: number;
  /** The agent's final message (Claude's result text; Codex's last agent_message). */
  summary: string | null;
  /** The CLI said the work ended well (Claude's result success with is_error false; Codex's last turn completed). */
  succeeded: boolean | null;
  /** Why it ended badly, in the CLI's words (an API error, error_max_turns, turn.failed). */
  error: string | null;
  /** A usage limit stopped the run: when it resets (ISO time) if the CLI said, and the provider's status code if any. */
  usageLimit: { resetsAt: string | null; status: number | null } | null;
  /**
   * The CLI is between two model calls with nothing of the model's in flight, so stopping it here
   * loses no work and its session resumes cleanly (a run over its budget stops at such a point):
   * Claude Code once every tool call of the model's last message has its result; Codex once a turn
   * completed; `command` right after a usage line.
   */
  idle: boolean;
}

/**
 * What a parser may know of its run: the workspace (file paths inside it are shown relative to it)
 * and the clock (Codex says a reset time as "5:46 PM" when it is today: today by this clock).
 */
export interface ParserOptions {
  cwd?: string;
  clock?: Pick<Clock, 'now'>;
}

/** Reads one CLI's stdout, line by line. Never throws: what it cannot read becomes a `raw` item. */
export interface StreamParser {
  /** One stdout line (without its newline): the log items it holds, in order. */
  line(text: string): RunLogItem[];
  /** What the stream said so far. */
  state(): StreamState;
}

/** One agent CLI: how to find it, how to start it, how to read it. */
export interface Driver {
  kind: RuntimeKind;
  /** The executable looked up on PATH when the runtime names no command. */
  defaultCommand: string | null;
  /** Arguments that make the CLI print its version and exit (`svc agents detect`). */
  versionArgs: string[];
  /**
   * What the stream's usage counts on a resumed session: this run's tokens only (Claude Code), or
   * the session's totals since it began (Codex's turn.completed), from which the runner takes off
   * what the earlier runs of the session already counted.
   */
  resumedUsage: 'per-run' | 'session-total';
  /**
   * What the CLI says (an error of its stream, or a stderr line) when the session it was to resume
   * cannot be: the run then starts a fresh session with the task's history in its prompt.
   */
  sessionMissing: RegExp;
  build(spec: RunSpec): Invocation;
  parser(opts?: ParserOptions): StreamParser;
}

/** What the supervisor is asked to run (an Invocation, placed and bounded). */
export interface SuperviseOptions {
  command: string;
  args: string[];
  cwd: string;
  /** The process's whole environment (the runner builds it; nothing of the daemon's leaks by default). */
  env: Record<string, string>;
  stdin: string;
  /** No stdout or stderr for this long ends the run as timed_out (runner.stallTimeoutSec). */
  stallMs: number;
  /** The run may last this long in all (runner.timeoutSec). */
  timeoutMs: number;
  /** Between SIGTERM to the group and SIGKILL (10 s). */
  killGraceMs: number;
  /** A line longer than this is cut (and said so); the rest of it up to the newline is dropped. */
  maxLineBytes: number;
  /** The process's nice value (runner.nice): 0 leaves it at the daemon's. */
  nice?: number;
  /**
   * One line (without its newline). A promise holds the stream's reading until it settles: a slow
   * consumer slows the CLI (full pipe) instead of growing a queue.
   */
  onStdoutLine(line: string): void | Promise<unknown>;
  onStderrLine(line: string): void | Promise<unknown>;
}

/** How a supervised process ended. `reason` says who ended it. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  reason: 'exited' | 'stalled' | 'timed_out' | 'cancelled' | 'spawn_failed';
  /** spawn_failed: the OS's error (ENOENT, EACCES). */
  error: string | null;
}

/** A live supervised process: its own process group, leader pid and start time (reaping after a crash). */
export interface Supervised {
  /** null when the process could not be started (the exit says spawn_failed): no group to signal. */
  pid: number | null;
  /** /proc start time of the leader (lib/proc.ts), null where there is no /proc. */
  startTime: string | null;
  /** Resolves once the process group is gone and both streams are drained. */
  exited: Promise<ProcessExit>;
  /** Close stdin, SIGTERM the group, SIGKILL it after killGraceMs; resolves with the exit. */
  cancel(): Promise<ProcessExit>;
  /**
   * The CLI waits on svc (a permission it asked for): its silence is not a stall until the
   * returned release is called (then the stall timeout counts from that moment).
   */
  hold(): () => void;
}

/** What a run's commit changed: files, and lines added and removed (binary files count as files). */
export interface DiffStat {
  files: number;
  added: number;
  removed: number;
}
