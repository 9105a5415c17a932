import type { ResourceServer } from '../../app.js';
import { Content, CustomTool, FunctionTool, InputItem, ModelList, ResponseObject, ResponsesTool, ResponseStreamEvent, ResponseUsage } from './responses-schema.js';
import { chatRoutes } from './routes.js';
import { ChatCompletion, ChatCompletionChunk } from './schema.js';

export const server: ResourceServer = {
  routes: chatRoutes,
  schemaNames: {
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
  },
};
