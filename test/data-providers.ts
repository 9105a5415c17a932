import { describe, inject } from 'vitest';

// The application-database suites run once per provider (a parameterised suite, not a copy): SQLite
// always, PostgreSQL against the run's throwaway server (global-setup.ts), skipped with the setup's
// reason when the machine has none.

export interface DataProvider {
  name: 'sqlite' | 'postgres';
  /** The project.json `data` section that selects it. */
  data: Record<string, unknown>;
  /** Why it does not run here ('' when it does). */
  skip: string;
}

export const DATA_PROVIDERS: DataProvider[] = [
  { name: 'sqlite', data: {}, skip: '' },
  { name: 'postgres', data: { provider: 'postgres', url: inject('pgUrl') }, skip: inject('pgUrl') ? '' : inject('pgSkip') || 'no PostgreSQL' },
];

/** A test project's config on provider `p`: its `data` section merged over the provider's. */
export function onProvider(p: DataProvider, config: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...config, data: { ...p.data, ...((config.data as Record<string, unknown> | undefined) ?? {}) } };
}

/** `describe` once per provider, named `title [provider]`; a provider this machine lacks is skipped. */
export function describeProviders(title: string, fn: (p: DataProvider) => void): void {
  for (const p of DATA_PROVIDERS) describe.skipIf(Boolean(p.skip))(`${title} [${p.name}]`, () => fn(p));
}
