import type { App } from '../app.js';
import type { Principal } from '../kernel/auth.js';
import { AppError } from '../kernel/errors.js';
import type { FunctionTool } from '../resources/chat/orchestrator.js';
import { mayUse, runTool, TOOLS, toolJsonSchema } from './index.js';

// The registry as function tools for a model the daemon drives itself (the chat orchestrator):
// the same definitions as MCP, shaped as OpenAI-style functions that run in-process.

const parameters = new Map(TOOLS.map((t) => [t.name, toolJsonSchema(t.input, 'input')]));

/**
 * The tools `principal` may use (all of them for the daemon itself, null), bound to this daemon;
 * never a tool meant for runs' CLIs (a model has no permission prompt to answer).
 */
export function functionTools(app: App, principal: Principal | null = null, opts: { checkOutputs?: boolean } = {}): FunctionTool[] {
  return TOOLS.filter((t) => t.audience !== 'run' && mayUse(principal, t)).map((t) => ({
    name: t.name,
    description: t.description,
    parameters: parameters.get(t.name)!,
    async call(args) {
      const r = await runTool(t, { app, principal, checkOutput: opts.checkOutputs }, args);
      if (!r.ok) throw new AppError(r.code, r.message, r.details ? { details: r.details } : {});
      return r.structured;
    },
  }));
}
