import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import type { App } from '../app.js';
import type { Principal } from '../kernel/auth.js';
import { AppError, type ErrorCode, type ErrorDetail } from '../kernel/errors.js';
import { invalidRequest, zodDetails } from '../kernel/server.js';

// What an agent tool is: one definition read by every door (MCP over HTTP, `svc mcp` through it,
// the chat orchestrator), so a tool's name, schema and behaviour cannot differ between them.

export interface ToolAnnotations {
  /** Changes nothing: a `tools: "read"` key may list and call it. */
  readOnlyHint: boolean;
  /** May remove or overwrite what cannot be got back. */
  destructiveHint: boolean;
  /** Calling it twice with the same input has no effect beyond the first call. */
  idempotentHint: boolean;
}

export interface ToolContext {
  app: App;
  /** The key the call came with (null only where the caller is the daemon itself). */
  principal: Principal | null;
  /**
   * Check every output against the tool's output schema, refusing fields it does not declare (on
   * in tests, like the REST responses' check): the handlers build their output from the same
   * typed values, so production skips the cost.
   */
  checkOutput?: boolean;
  /** Aborted when the caller goes away (its HTTP request closed): a tool that waits stops waiting. */
  signal?: AbortSignal;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyObject = z.ZodObject<any> | z.ZodType<Record<string, unknown>>;

export interface ToolDef<I extends AnyObject = AnyObject, O extends AnyObject = AnyObject> {
  /** snake_case, under 60 characters (some clients cap tool names at 64 with a prefix). */
  name: string;
  title: string;
  /** Written for a model: when to use the tool, what it does, what comes back. */
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  /**
   * 'run': called by the CLI of a run svc started (its run key), never by a model: listed to and
   * callable by run keys only, and not offered to the daemon's own chat models.
   */
  audience?: 'run';
  /**
   * MCP answers with the summary text alone: no structuredContent, no outputSchema listed. Claude
   * Code reads a permission prompt's answer from one text block, and would take structuredContent
   * in its place.
   */
  textOnly?: boolean;
  /**
   * Waits for something other than the state (a person's decision): MCP answers it as a stream
   * with progress, and gives up when the caller hangs up.
   */
  waits?: boolean;
  /** Asynchronous (the state is); a tool that waits says so (`waits`). */
  handler(ctx: ToolContext, input: z.output<I>): z.input<O> | Promise<z.input<O>>;
  /** One short line for the model and for people reading a transcript. */
  summary(output: z.output<O>): string;
}

export type AnyTool = ToolDef<AnyObject, AnyObject>;

export function defineTool<I extends AnyObject, O extends AnyObject>(def: ToolDef<I, O>): AnyTool {
  return def as unknown as AnyTool;
}

/** What a call gives back, whatever door it came through. */
export type ToolResult = { ok: true; structured: Record<string, unknown>; text: string } | { ok: false; code: ErrorCode; status: number; message: string; details?: ErrorDetail[] };

/**
 * Keys limited to read-only tools see and call only those (apiKeys[].tools: "read"); a tool for
 * runs' CLIs is seen and called by run keys only.
 */
export const mayUse = (principal: Principal | null, tool: AnyTool): boolean =>
  (tool.audience !== 'run' || principal?.runId !== undefined) && (principal?.tools !== 'read' || tool.annotations.readOnlyHint);

function failure(err: AppError): ToolResult {
  return { ok: false, code: err.code, status: err.status, message: err.message, ...(err.details ? { details: err.details } : {}) };
}

/**
 * Validates the input, runs the tool and checks its output against the declared schema. Known
 * errors (AppError) become a failed result carrying our code; anything else is rethrown for the
 * door to log and answer as an internal error, never leaking internals to the model. A tool whose
 * handler is asynchronous gives a promise of the result.
 */
export function runTool(tool: AnyTool, ctx: ToolContext, args: unknown): ToolResult | Promise<ToolResult> {
  if (!mayUse(ctx.principal, tool)) {
    const why =
      tool.audience === 'run'
        ? `Tool ${tool.name} is called by the CLI of a run svc started, with that run's key.`
        : `Tool ${tool.name} changes state; this API key may only call read-only tools (apiKeys[].tools is "read").`;
    return failure(new AppError('forbidden', why));
  }
  const parsed = tool.input.safeParse(args ?? {});
  // Worded as REST words a body it refuses, with `input` where REST says `body`.
  if (!parsed.success) return failure(invalidRequest(zodDetails('input', parsed.error)));
  try {
    const out = tool.handler(ctx, parsed.data);
    if (out instanceof Promise) return out.then((o) => succeeded(tool, ctx, o as Record<string, unknown>), known);
    return succeeded(tool, ctx, out as Record<string, unknown>);
  } catch (err) {
    return known(err);
  }
}

function succeeded(tool: AnyTool, ctx: ToolContext, out: Record<string, unknown>): ToolResult {
  if (ctx.checkOutput) checkOutput(tool, out);
  return { ok: true, structured: out, text: tool.summary(out as never) };
}

function known(err: unknown): ToolResult {
  if (err instanceof AppError) return failure(err);
  throw err;
}

function checkOutput(tool: AnyTool, out: unknown): void {
  const r = tool.output.safeParse(out);
  if (!r.success) throw new Error(`output of tool ${tool.name} does not match its schema: ${JSON.stringify(r.error.issues)}`);
  if (!isDeepStrictEqual(JSON.parse(JSON.stringify(out)), JSON.parse(JSON.stringify(r.data)))) {
    throw new Error(`output of tool ${tool.name} carries fields its schema does not declare`);
  }
}

/** JSON Schema (2020-12) of a tool's input or output, as MCP lists it. */
export function toolJsonSchema(schema: AnyObject, io: 'input' | 'output'): Record<string, unknown> {
  const s = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete s.$schema;
  return s;
}
