import { readFileSync } from 'node:fs';
import type { RunSpec, StreamParser, RunLogItem } from '../../src/resources/runs/types.js';

// Shared by the drivers' unit tests: the recorded streams (test/fixtures/runs/, written by
// test/run-drivers.test.ts with SVC_RECORD_RUN_FIXTURES=1) and a RunSpec to build from.

/** The workspace the recordings ran in, as the recorder wrote it into them. */
export const FIXTURE_CWD = '/tmp/svc-fixture/repo';

export const fixtureLines = (name: string): string[] =>
  readFileSync(new URL(`../fixtures/runs/${name}.jsonl`, import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l !== '');

/** Every item the parser makes of `lines`, in order. */
export const feed = (parser: StreamParser, lines: string[]): RunLogItem[] => lines.flatMap((l) => parser.line(l));

export const ofKind = <K extends RunLogItem['kind']>(items: RunLogItem[], kind: K) => items.filter((i): i is Extract<RunLogItem, { kind: K }> => i.kind === kind);

export function spec(over: Partial<RunSpec> & { agent?: Partial<RunSpec['agent']>; runtime?: Partial<RunSpec['runtime']> } = {}): RunSpec {
  const { agent, runtime, ...rest } = over;
  return {
    runId: 'run-1',
    taskId: 'task-1',
    cwd: '/w/repo',
    prompt: 'Do the task.',
    resumeSessionId: null,
    mcp: { url: 'http://127.0.0.1:7420/mcp', key: 'run-key-1' },
    runDir: '/w/run',
    ...rest,
    agent: {
      name: 'ana',
      model: null,
      systemPrompt: null,
      maxTurns: null,
      allowedTools: [],
      allowedPaths: [],
      reasoning: null,
      displayName: null,
      email: null,
      skills: [],
      ...agent,
    },
    runtime: { kind: 'claude', command: '/bin/agent', args: [], permissionMode: 'acceptEdits', permissionTimeoutSec: 900, ...runtime },
  };
}
