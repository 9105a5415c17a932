import type { Command } from 'commander';

// What a resource is to the rest of svc: one descriptor per resource folder
// (src/resources/<name>/resource.ts), listed once in src/resources/index.ts. Descriptors are plain
// data: nothing registers itself on import, the composition root passes them along.
//
// A descriptor is light: what any process may load (the CLI loads every descriptor to find its
// commands, and must not load the daemon: issue 8). What only the daemon needs (routes, background
// parts, hooks) is its `server`, loaded by the daemon and by what documents the API.

/** A CLI command group, loaded only when it runs: `svc tasks ls` loads the tasks group and nothing else. */
export interface CommandEntry {
  name: string;
  /** One line for `svc --help`, shown without loading the group. */
  summary: string;
  load(): Promise<Command>;
}

/**
 * Which CLI command does what an endpoint does, for the CLI's words of an API message (cli/api-words.ts).
 * `{x}` in the command is the id the message gives for `{x}`, else `<x>`; `names` says what the
 * command's usage calls it. The endpoint may require body properties ("enabled": true) for the command to fit.
 */
export interface EndpointCommand {
  endpoint: string;
  command: string;
  names?: Record<string, string>;
}

/** One step of the state database's schema, forward only (db/migrate.ts applies them). */
export interface Migration {
  version: number;
  name: string;
  /** The DDL, in SQLite's spelling; PostgreSQL runs pgDdl(sql) unless `postgres` gives its own. */
  sql: string;
  postgres?: string;
}

export interface Resource<Server = unknown> {
  name: string;
  /** Its CLI command groups, in the order `svc --help` lists them. */
  commands?: readonly CommandEntry[];
  /** Endpoints of its API that a CLI command does, named in the CLI's error messages. */
  endpoints?: readonly EndpointCommand[];
  /** The event categories it emits (their schemas are in the one event registry, events/registry.ts). */
  events?: readonly string[];
  /**
   * The state tables it owns that `svc state export` copies, parents before children (rows go in
   * in this order, each checked against the foreign keys of those before it).
   */
  tables?: readonly string[];
  /** The state tables it owns that a move to another state leaves behind (who runs now, sessions). */
  transientTables?: readonly string[];
  /** Its state migrations, one file each (a migration that spans resources is in db/migrations/). */
  migrations?: readonly Migration[];
  /** What the daemon runs for it; a dynamic import, so that loading the descriptor loads none of it. */
  server?(): Promise<Server>;
}
