import type { App } from '../../app.js';
import type { Agent } from '../agents/schema.js';
import { getAgent } from '../agents/service.js';
import { budgetHold, budgetStates, type BudgetState } from '../budgets/service.js';
import { pausedProviders, splitModelId } from '../providers/service.js';
import type { Hold } from './schema.js';
import * as store from './store.js';
import type { RuntimeKind } from './types.js';

// What a queued or paused run waits for: one reading of every hold, shared by the runner (which
// starts a run only when nothing holds it, and wakes when the first hold ends) and the API (which
// says why each run waits). The holds, in the order they are looked at:
//   provider     the agent's provider is paused by a usage limit (providers' cooldown state)
//   backoff      a retry's backoff, or the reset a paused run's CLI gave (not_before)
//   budget       a budget of the agent or the project is spent in its period (resources/budgets)
//   resume       paused while runner.autoResume is false: a person resumes it
//   concurrency  the agent already runs maxConcurrency runs
//   slots        the runner is full
// The first two are state (they survive a restart); a budget's is computed from the runs' usage.

const KIND_PROVIDER: Record<RuntimeKind, string | null> = { claude: 'anthropic', codex: 'openai', command: null };

/**
 * The provider an agent's runs use: the provider part of its model (`anthropic/claude-…`), else its
 * runtime's (Claude Code: anthropic; Codex: openai); a `command` runtime has none unless its model
 * names one.
 */
export function providerOf(agent: Pick<Agent, 'model'>, kind: RuntimeKind): string | null {
  return (agent.model && splitModelId(agent.model)?.provider) || KIND_PROVIDER[kind];
}

/**
 * One look at the holds: the providers' pauses are read once, each agent and its budget at most
 * once. Made per pass of the runner or per request, never kept (what holds changes as runs go).
 */
export class Holds {
  readonly now: number;
  private readonly paused: Map<string, number>;
  private readonly agents = new Map<string, Agent | null>();
  private readonly budgets = new Map<string, Hold | null>();
  private states: BudgetState[] | null = null;
  private readonly active = new Map<string, number>();
  /** The earliest end of a hold met so far (the runner wakes then). */
  next: number | null = null;

  private constructor(
    private readonly app: App,
    now: number,
    paused: Map<string, number>,
  ) {
    this.now = now;
    this.paused = paused;
  }

  /** The holds as they are now: the providers' pauses read once. */
  static async read(app: App, now = app.clock.now()): Promise<Holds> {
    return new Holds(app, now, await pausedProviders(app));
  }

  async agent(name: string): Promise<Agent | null> {
    if (!this.agents.has(name)) this.agents.set(name, await getAgent(this.app.db, name));
    return this.agents.get(name)!;
  }

  /** The agent's provider, or null (no such agent, no runtime, or none to say). */
  async providerOfAgent(name: string): Promise<string | null> {
    const a = await this.agent(name);
    return a?.runtime ? providerOf(a, a.runtime.kind) : null;
  }

  /** Providers paused now: id → until (epoch ms). */
  pausedNow(): Map<string, number> {
    return new Map([...this.paused].filter(([, until]) => until > this.now));
  }

  /** Pauses whose time came and that no runner said are over yet: id → the until to clear. */
  pausesOver(): [string, number][] {
    return [...this.paused].filter(([, until]) => until <= this.now);
  }

  private seen(until: number): void {
    if (until > this.now && (this.next === null || until < this.next)) this.next = until;
  }

  /** The agent's provider, paused by a usage limit now: until when. */
  private async providerHold(agent: string): Promise<Hold | null> {
    const provider = await this.providerOfAgent(agent);
    const until = provider ? this.paused.get(provider) : undefined;
    if (!provider || until === undefined || until <= this.now) return null;
    this.seen(until);
    return { kind: 'provider', provider, until: new Date(until).toISOString() };
  }

  /** A spent budget of the agent or the project: until its period ends. */
  private async budgetHold(agent: string): Promise<Hold | null> {
    if (!this.budgets.has(agent)) {
      // Every budget's spend is read once per look, however many agents it limits.
      this.states ??= await budgetStates(this.app, undefined, this.now);
      const b = await budgetHold(this.app, agent, this.now, this.states);
      this.budgets.set(agent, b && { kind: 'budget', scope: b.scope, agent: b.agent, period: b.period, until: b.periodEnd });
    }
    const hold = this.budgets.get(agent)!;
    if (hold?.kind === 'budget') this.seen(Date.parse(hold.until));
    return hold;
  }

  /** The provider or budget hold on new runs of `agent` (what keeps a queued run from starting, besides slots). */
  async blocking(agent: string): Promise<Hold | null> {
    return (await this.providerHold(agent)) ?? (await this.budgetHold(agent));
  }

  /** What holds a run that is queued or paused, besides slots and concurrency. */
  async of(run: Pick<store.RunRecord, 'agent' | 'status' | 'notBefore'>): Promise<Hold | null> {
    const provider = await this.providerHold(run.agent);
    if (provider) return provider;
    if (run.notBefore && Date.parse(run.notBefore) > this.now) {
      this.seen(Date.parse(run.notBefore));
      return { kind: 'backoff', until: run.notBefore };
    }
    const budget = await this.budgetHold(run.agent);
    if (budget) return budget;
    if (run.status === 'paused' && !this.app.config().runner.autoResume) return { kind: 'resume' };
    return null;
  }

  /**
   * Everything that holds a live run, for people (the API): of() and then, for a queued run, the
   * agent's concurrency and the runner's slots.
   */
  async explain(run: store.RunRecord, slots: { running: number; capacity: number } | null): Promise<Hold | null> {
    if (run.status !== 'queued' && run.status !== 'paused') return null;
    const held = await this.of(run);
    if (held || run.status === 'paused') return held;
    const agent = await this.agent(run.agent);
    const limit = agent?.maxConcurrency ?? 1;
    if (!this.active.has(run.agent)) this.active.set(run.agent, await store.activeCount(this.app.db, { agent: run.agent }));
    const running = this.active.get(run.agent)!;
    if (running >= limit) return { kind: 'concurrency', running, limit };
    if (slots && slots.running >= slots.capacity) return { kind: 'slots', ...slots };
    return null;
  }

  /** Queued and paused runs per paused provider (auth status, runner:paused). */
  async waitingByProvider(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const { agent, n } of await store.waitingByAgent(this.app.db)) {
      const p = await this.providerOfAgent(agent);
      if (p) out.set(p, (out.get(p) ?? 0) + n);
    }
    return out;
  }
}
