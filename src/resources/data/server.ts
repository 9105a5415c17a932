import type { ResourceServer } from '../../app.js';
import { dataRoutes } from './routes.js';
import { ColumnDef, DatabaseOut, Deleted, IndexDef, MigrationOut, QueryOut, RecordResult, SchemaDef, TableDef } from './schema.js';

// Where the databases live (a child process per SQLite file, or a PostgreSQL server) is one of the
// daemon's parts (src/parts/data.ts, "data provider"): it depends on project.json's data.provider.

export const server: ResourceServer = {
  routes: dataRoutes,
  schemaNames: {
    Database: DatabaseOut,
    DataSchema: SchemaDef,
    DataTable: TableDef,
    DataColumn: ColumnDef,
    DataIndex: IndexDef,
    Deleted,
    RecordResult,
    QueryResult: QueryOut,
    Migration: MigrationOut,
  },
};
