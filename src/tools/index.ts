import type { AnyTool } from './define.js';
import { boardTools } from './board.js';
import { permissionTools } from './permissions.js';
import { routineTools } from './routines.js';
import { runTools } from './runs.js';
import { taskTools } from './tasks.js';

export { mayUse, runTool, toolJsonSchema, type AnyTool, type ToolContext, type ToolResult } from './define.js';

/**
 * The agent tool registry: every tool the daemon offers to agents (MCP) and to its own chat
 * orchestrator. Kept small on purpose: some clients cap how many tools they load.
 */
export const TOOLS: readonly AnyTool[] = [...taskTools, ...boardTools, ...runTools, ...permissionTools, ...routineTools];

const byName = new Map(TOOLS.map((t) => [t.name, t]));

export const findTool = (name: string): AnyTool | undefined => byName.get(name);
