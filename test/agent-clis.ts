// The real agent CLIs for the tests that drive them (scripts/agent-clis.mjs pins and installs them).
// Absent on a developer's machine, such a test is skipped with the reason, said once per file; under
// CI=true (.ci/run installs both) an absent CLI fails the test instead of skipping it.
import { AGENT_CLIS, agentCliPath } from '../scripts/agent-clis.mjs';

export type AgentCliName = keyof typeof AGENT_CLIS;

export interface AgentCliFound {
  path: string;
  version: string;
}

const said = new Set<AgentCliName>();

/**
 * The pinned CLI's path, or null with a warning (once) when it is not installed; throws under CI=true.
 * Use as `const claude = agentCli('claude'); describe.skipIf(!claude)(...)`.
 */
export function agentCli(name: AgentCliName): AgentCliFound | null {
  const path = agentCliPath(name);
  if (path) return { path, version: AGENT_CLIS[name].version };
  const why = `${AGENT_CLIS[name].pkg}@${AGENT_CLIS[name].version} is not installed: run \`node scripts/agent-clis.mjs\` to install the pinned agent CLIs (about 650 MB, from the npm registry) into .cache/agent-clis/`;
  if (process.env.CI === 'true') throw new Error(`${why} (CI=true: tests that drive the real CLIs must run, not skip)`);
  if (!said.has(name)) {
    said.add(name);
    console.warn(`tests of the real ${name} CLI skipped: ${why}`);
  }
  return null;
}
