import type { App } from '../app.js';
import { errorFields } from '../kernel/log.js';
import { getAgent, listAgents } from '../resources/agents/service.js';

// Every run's CLI calls the daemon's /mcp (its svc tools) in its first seconds, and the MCP SDK is
// loaded with the first call (door.ts): one synchronous evaluation of its schemas that holds every
// other request behind it (131 ms measured in a daemon starting 8 Claude Code runs on two cores).
// A daemon that runs agents loads it once it knows it has one with a runtime (a second after
// start, or when one is added or given a runtime): before the first run's busy start, not in it.
// A daemon with no such agent never loads it until a client calls.

const AFTER_START_MS = 1000;

/** Calls `load` once, when an agent with a runtime exists here; answers the function that stops watching. */
export function loadWhenAgentsRun(app: App, load: () => Promise<void>): () => void {
  let done = false;
  const stop = () => {
    done = true;
    clearTimeout(timer);
    unsubscribe();
  };
  const check = async (name: string | null) => {
    if (done || !app.config().runner.enabled) return;
    try {
      const agents = name === null ? await listAgents(app.db) : [await getAgent(app.db, name)];
      if (done || !agents.some((a) => a?.runtime)) return;
      stop();
      await load();
    } catch (err) {
      app.log.warn('the MCP server could not be loaded ahead of the agents; it loads with their first call', errorFields(err));
    }
  };
  const timer = setTimeout(() => void check(null), AFTER_START_MS);
  timer.unref();
  const unsubscribe = app.events.subscribe((e) => {
    const data = e.data as { name?: unknown; fields?: unknown };
    if (typeof data.name !== 'string') return;
    if (e.name === 'agent:created' || (e.name === 'agent:updated' && Array.isArray(data.fields) && data.fields.includes('runtime'))) void check(data.name);
  });
  return stop;
}
