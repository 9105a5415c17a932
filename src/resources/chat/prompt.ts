import type { Agent } from '../agents/schema.js';

/**
 * The system message an agent speaks from: its own system prompt, who it is, and the content of the
 * skills assigned to it, in that order. Fields it does not set are left out.
 */
export function agentSystemMessage(agent: Agent, skills: { name: string; description: string | null; content: string }[]): string {
  const parts: string[] = [];
  if (agent.systemPrompt) parts.push(agent.systemPrompt);
  const id = agent.identity ?? {};
  const who: string[] = [`You are ${id.displayName ?? agent.name}${id.title ? `, ${id.title}` : ''}${id.company ? ` at ${id.company}` : ''}.`];
  if (agent.role) who.push(`Your role: ${agent.role}.`);
  if (agent.team) who.push(`Your team: ${agent.team}.`);
  if (agent.reportsTo) who.push(`You report to ${agent.reportsTo}.`);
  if (id.bio) who.push(id.bio);
  if (id.tone) who.push(`Tone: ${id.tone}`);
  if (id.personality) who.push(`Personality: ${id.personality}`);
  if (id.responsibilities?.length) who.push(`Responsibilities:\n${id.responsibilities.map((r) => `- ${r}`).join('\n')}`);
  parts.push(who.join('\n'));
  for (const s of skills) parts.push(`# Skill: ${s.name}\n${s.description ? `${s.description}\n\n` : ''}${s.content}`);
  return parts.join('\n\n');
}
