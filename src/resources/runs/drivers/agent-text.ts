import { splitModelId } from '../../providers/catalog.js';
import type { RunAgent } from '../types.js';

// What two drivers say of an agent the same way: its model as its CLI names it and the system
// prompt svc adds (the agent's own prompt, then who it is).

/**
 * The model name a CLI is given: svc's `provider/model` without the provider. Which provider
 * serves it is the CLI's own business (its login, ANTHROPIC_BASE_URL, a Codex model_provider):
 * `anthropic/claude-x` gives Claude Code `claude-x`, and `openrouter/x/y` gives it `x/y`.
 */
export const cliModel = (model: string | null): string | null => (model ? (splitModelId(model)?.model ?? model) : null);

/** The identity line: the agent's name in svc, with its display name and email when it has them. */
export function identityLine(agent: RunAgent): string {
  const who = [agent.displayName, agent.email ? `<${agent.email}>` : null].filter(Boolean).join(' ');
  return who ? `You are ${who}, the svc agent "${agent.name}".` : `You are the svc agent "${agent.name}".`;
}

/** The agent's system prompt followed by its identity: what a CLI appends to its own. */
export function systemText(agent: RunAgent, more: string[] = []): string {
  return [agent.systemPrompt?.trim() || null, identityLine(agent), ...more].filter(Boolean).join('\n\n');
}
