import type { SchemaNames } from './kernel/openapi.js';
import { IdentitySchema } from './resources/agents/schema.js';
import { Content, CustomTool, FunctionTool, InputItem, ModelList, ResponseObject, ResponsesTool, ResponseStreamEvent, ResponseUsage } from './resources/chat/responses-schema.js';
import { ChatCompletion, ChatCompletionChunk } from './resources/chat/schema.js';
import { Timestamp } from './resources/common.js';
import { ColumnDef, DatabaseOut, Deleted, IndexDef, MigrationOut, QueryOut, RecordResult, SchemaDef, TableDef } from './resources/data/schema.js';
import { Parameter } from './resources/playbooks/schema.js';
import { AuthStatusOut, ProviderStatusOut } from './resources/providers/schema.js';
import { ClaimOut, CommentOut, LeaseOut, NextOut } from './resources/tasks/schema.js';
import { DeliveryDetailOut, DeliveryOut, RecoverOut, RotateOut, WebhookCreated, WebhookOut } from './resources/webhooks/schema.js';

// Names of the OpenAPI components (components.schemas) for schemas that carry no `.meta({ id })`:
// each resource's Out types, and the parts requests and answers share. The document $refs each one
// instead of writing it out in every operation that uses it. A schema that more than one operation
// uses needs a name here or a `.meta({ id })` (test/docs.test.ts finds any left inline); a name is
// part of the API, so never rename one.

export const API_SCHEMA_NAMES: SchemaNames = {
  Timestamp,
  AgentIdentity: IdentitySchema,
  PlaybookParameter: Parameter,
  Database: DatabaseOut,
  DataSchema: SchemaDef,
  DataTable: TableDef,
  DataColumn: ColumnDef,
  DataIndex: IndexDef,
  Deleted,
  RecordResult,
  QueryResult: QueryOut,
  Migration: MigrationOut,
  Webhook: WebhookOut,
  WebhookCreated,
  WebhookDelivery: DeliveryOut,
  WebhookDeliveryDetail: DeliveryDetailOut,
  WebhookSecretRotation: RotateOut,
  WebhookRecovery: RecoverOut,
  Lease: LeaseOut,
  TaskComment: CommentOut,
  ClaimedTask: ClaimOut,
  NextTask: NextOut,
  AuthStatus: AuthStatusOut,
  ProviderStatus: ProviderStatusOut,
  ChatCompletion,
  ChatCompletionChunk,
  Response: ResponseObject,
  ResponseStreamEvent,
  ResponseUsage,
  ResponseInputItem: InputItem,
  ResponseContent: Content,
  ResponsesTool,
  ResponsesFunctionTool: FunctionTool,
  ResponsesCustomTool: CustomTool,
  ModelList,
};
