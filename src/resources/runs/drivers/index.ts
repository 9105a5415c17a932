import type { Driver, RuntimeKind } from '../types.js';
import { claudeDriver } from './claude.js';
import { codexDriver } from './codex.js';
import { commandDriver } from './command.js';

// The drivers by runtime kind. A plain table the runner reads: nothing registers itself.

export const DRIVERS: ReadonlyMap<RuntimeKind, Driver> = new Map<RuntimeKind, Driver>([
  ['claude', claudeDriver],
  ['codex', codexDriver],
  ['command', commandDriver],
]);

/** The driver of a runtime kind (every kind of RUNTIME_KINDS has one). */
export function driverFor(kind: RuntimeKind): Driver {
  const driver = DRIVERS.get(kind);
  if (!driver) throw new Error(`no driver for runtime kind ${kind}`);
  return driver;
}
