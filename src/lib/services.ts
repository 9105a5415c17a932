/**
 * A typed slot for one per-daemon service (a resource's live state: its index, worker, hooks),
 * declared by the part that owns it and filled in daemon.ts. Each daemon has its own Services, so
 * two daemons in one process never share state. Generic, so that any layer may declare a key.
 */
export interface ServiceKey<T> {
  readonly name: string;
  /** Never set; carries T for the type checker. */
  readonly type?: T;
}

export const serviceKey = <T>(name: string): ServiceKey<T> => ({ name });

export class Services {
  private readonly map = new Map<ServiceKey<unknown>, unknown>();

  provide<T>(key: ServiceKey<T>, value: T): T {
    if (this.map.has(key)) throw new Error(`service ${key.name} is provided twice`);
    this.map.set(key, value);
    return value;
  }

  get<T>(key: ServiceKey<T>): T {
    if (!this.map.has(key)) throw new Error(`service ${key.name} is not provided; daemon.ts wires it`);
    return this.map.get(key) as T;
  }
}
